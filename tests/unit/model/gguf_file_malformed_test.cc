// GgufFile on malformed images: each must give the right error code, with a message naming the
// file and the field at fault, and must never read outside the buffer (run under ASan).
#include <gtest/gtest.h>

#include <functional>
#include <ostream>

#include "engine/model/gguf_file.h"
#include "tests/util/gguf_touch.h"
#include "tests/util/gguf_writer.h"

namespace sparrow {
namespace {

using testing::GgufImage;
using testing::GgufWriter;

constexpr uint64_t k2_63 = uint64_t{1} << 63;
constexpr uint64_t kU64Max = ~uint64_t{0};
constexpr uint32_t kU32Max = ~uint32_t{0};
constexpr auto kCorrupt = StatusCode::kCorrupt;
constexpr auto kUnsupported = StatusCode::kUnsupported;

// Five keys (string, u32, i32 array, string array, f32) and two tensors (F32, Q8_0).
GgufWriter BaseWriter() {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddU32("k.u32", 7);
  w.AddArray<int32_t>("k.ints", {1, 2, 3});
  w.AddStringArray("k.strs", {"ab", "cd"});
  w.AddF32("k.f32", 1.5f);
  w.AddTensor("tensor.a", TensorType::kF32, {4, 2}, std::vector<uint8_t>(32, 1));
  w.AddTensor("tensor.b", TensorType::kQ8_0, {32}, std::vector<uint8_t>(34, 2));
  return w;
}

GgufImage Base() {
  return BaseWriter().Build();
}

using Maker = std::function<GgufImage()>;

// The base image with one field overwritten.
Maker Patch(std::function<void(GgufImage&)> patch) {
  return [patch] {
    GgufImage img = Base();
    patch(img);
    return img;
  };
}

// The base image with more entries added after the base ones.
Maker Extra(std::function<void(GgufWriter&)> add) {
  return [add] {
    GgufWriter w = BaseWriter();
    add(w);
    return w.Build();
  };
}

Maker Bytes(std::function<std::vector<uint8_t>()> bytes) {
  return [bytes] { return GgufImage{bytes(), {}}; };
}

Maker Only(GgufWriter w) {
  return [w] { return w.Build(); };
}

// A file with only a general.alignment entry (laid out at 32) whose value is then overwritten.
Maker Alignment(uint32_t a) {
  return [a] {
    GgufWriter w;
    w.SetAlignment(32);
    w.AddTensor("t", TensorType::kF32, {8}, std::vector<uint8_t>(32));
    GgufImage img = w.Build();
    img.PatchU32(img.layout.kvs[0].value, a);
    return img;
  };
}

Maker OneTensor(TensorType type, std::vector<uint64_t> dims, size_t bytes = 32,
                std::string name = "odd.tensor") {
  GgufWriter w;
  w.AddTensor(std::move(name), type, std::move(dims), std::vector<uint8_t>(bytes));
  return Only(std::move(w));
}

// [[1, 2], [3]]: an array of i32 arrays.
std::vector<uint8_t> NestedArray() {
  std::vector<uint8_t> v;
  GgufWriter::AppendU32(v, static_cast<uint32_t>(GgufValueType::kArray));
  GgufWriter::AppendU64(v, 2);
  for (std::vector<uint32_t> inner : {std::vector<uint32_t>{1, 2}, std::vector<uint32_t>{3}}) {
    GgufWriter::AppendU32(v, static_cast<uint32_t>(GgufValueType::kI32));
    GgufWriter::AppendU64(v, inner.size());
    for (uint32_t x : inner) GgufWriter::AppendU32(v, x);
  }
  return v;
}

std::vector<uint8_t> BoolArrayHolding2() {
  std::vector<uint8_t> v;
  GgufWriter::AppendU32(v, static_cast<uint32_t>(GgufValueType::kBool));
  GgufWriter::AppendU64(v, 2);
  v.push_back(1);
  v.push_back(2);
  return v;
}

struct Case {
  std::string name;
  Maker make;
  StatusCode code;
  std::vector<std::string> needles;  // substrings the message must contain
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> Cases() {
  const uint32_t kArray = static_cast<uint32_t>(GgufValueType::kArray);
  const uint32_t kBool = static_cast<uint32_t>(GgufValueType::kBool);
  const auto F32 = TensorType::kF32;
  using I = GgufImage;
  using W = GgufWriter;
  // clang-format off
  return {
      // Header.
      {"Empty", Bytes([] { return std::vector<uint8_t>{}; }), kCorrupt, {"magic"}},
      {"ShortMagic", Bytes([] { return std::vector<uint8_t>{'G', 'G', 'U'}; }), kCorrupt, {"magic"}},
      {"BadMagic", Patch([](I& i) { i.SetMagic("GGUX"); }), kCorrupt, {"GGUF"}},
      {"LowercaseMagic", Patch([](I& i) { i.SetMagic("gguf"); }), kCorrupt, {"GGUF"}},
      {"TruncatedVersion", Bytes([] { return Base().Prefix(6); }), kCorrupt, {"version"}},
      {"Version0", Patch([](I& i) { i.SetVersion(0); }), kUnsupported, {"version"}},
      {"Version1", Patch([](I& i) { i.SetVersion(1); }), kUnsupported, {"version"}},
      {"Version4", Patch([](I& i) { i.SetVersion(4); }), kUnsupported, {"version 4"}},
      {"VersionMax", Patch([](I& i) { i.SetVersion(kU32Max); }), kUnsupported, {"version"}},
      {"TensorCount2_63", Patch([](I& i) { i.SetTensorCount(k2_63); }), kCorrupt, {"tensor count"}},
      {"TensorCountMax", Patch([](I& i) { i.SetTensorCount(kU64Max); }), kCorrupt, {"tensor count"}},
      {"TensorCountPlusOne", Patch([](I& i) { i.SetTensorCount(3); }), kCorrupt, {}},
      {"KvCount2_63", Patch([](I& i) { i.SetKvCount(k2_63); }), kCorrupt, {"metadata count"}},
      {"KvCountMax", Patch([](I& i) { i.SetKvCount(kU64Max); }), kCorrupt, {"metadata count"}},
      {"KvCountPlusOne", Patch([](I& i) { i.SetKvCount(6); }), kCorrupt, {}},
      // Keys and values.
      {"KeyLength2_63", Patch([](I& i) { i.SetKeyLength(1, k2_63); }), kCorrupt, {"metadata key 1"}},
      {"KeyLengthMax", Patch([](I& i) { i.SetKeyLength(1, kU64Max); }), kCorrupt, {"metadata key 1"}},
      {"KeyLengthPastEnd", Patch([](I& i) { i.SetKeyLength(1, i.bytes.size()); }), kCorrupt, {"metadata key 1"}},
      {"KeyLengthZero", Patch([](I& i) { i.SetKeyLength(1, 0); }), kCorrupt, {"metadata key 1"}},
      {"EmptyKey", Extra([](W& w) { w.AddU32("", 1); }), kCorrupt, {"metadata key 5"}},
      {"StringLength2_63", Patch([](I& i) { i.SetStringLength(0, k2_63); }), kCorrupt, {"general.architecture"}},
      {"StringLengthPastEnd", Patch([](I& i) { i.SetStringLength(0, i.bytes.size()); }), kCorrupt, {"general.architecture"}},
      {"ValueType13", Patch([](I& i) { i.SetValueType(1, 13); }), kCorrupt, {"k.u32", "13"}},
      {"ValueTypeMax", Patch([](I& i) { i.SetValueType(1, kU32Max); }), kCorrupt, {"k.u32"}},
      {"ArrayCount2_63", Patch([](I& i) { i.SetArrayCount(2, k2_63); }), kCorrupt, {"k.ints"}},
      {"ArrayBytesOverflow", Patch([](I& i) { i.SetArrayCount(2, uint64_t{1} << 62); }), kCorrupt, {"k.ints"}},
      {"ArrayCountPastEnd", Patch([](I& i) { i.SetArrayCount(2, 1 << 20); }), kCorrupt, {"k.ints"}},
      {"ArrayElemType13", Patch([](I& i) { i.SetArrayElemType(2, 13); }), kCorrupt, {"k.ints", "13"}},
      {"StringArrayCount2_63", Patch([](I& i) { i.SetArrayCount(3, k2_63); }), kCorrupt, {"k.strs"}},
      {"StringArrayElemLength", Patch([](I& i) { i.SetFirstArrayStringLength(3, k2_63); }), kCorrupt, {"k.strs"}},
      {"NestedArray", Extra([=](W& w) { w.AddRaw("nested.key", kArray, NestedArray()); }), kUnsupported, {"nested.key"}},
      {"ElemTypePatchedToArray", Patch([](I& i) { i.SetArrayElemType(2, 9); }), kUnsupported, {"k.ints"}},
      {"BoolValue2", Extra([=](W& w) { w.AddRaw("bad.bool", kBool, {2}); }), kCorrupt, {"bad.bool"}},
      {"BoolArrayValue2", Extra([=](W& w) { w.AddRaw("bad.bools", kArray, BoolArrayHolding2()); }), kCorrupt, {"bad.bools"}},
      {"DuplicateKey", Extra([](W& w) { w.AddU32("k.u32", 8); }), kCorrupt, {"k.u32"}},
      // Alignment.
      {"Alignment0", Alignment(0), kCorrupt, {"general.alignment"}},
      {"Alignment3", Alignment(3), kCorrupt, {"general.alignment"}},
      {"Alignment48", Alignment(48), kCorrupt, {"general.alignment"}},
      {"Alignment2_31", Alignment(1u << 31), kCorrupt, {"general.alignment"}},
      {"AlignmentString", Only(std::move(W().AddString("general.alignment", "32"))), kCorrupt, {"general.alignment"}},
      {"AlignmentNegative", Only(std::move(W().AddI32("general.alignment", -32))), kCorrupt, {"general.alignment"}},
      {"AlignmentFloat", Only(std::move(W().AddF32("general.alignment", 32))), kCorrupt, {"general.alignment"}},
      // Tensor infos.
      {"TensorNameLength2_63", Patch([](I& i) { i.SetTensorNameLength(1, k2_63); }), kCorrupt, {"tensor 1"}},
      {"TensorNameEmpty", OneTensor(F32, {8}, 32, ""), kCorrupt, {"tensor 0"}},
      {"TensorTypeRemoved4", Patch([](I& i) { i.SetTensorType(1, 4); }), kCorrupt, {"tensor.b", "type"}},
      {"TensorType31", Patch([](I& i) { i.SetTensorType(1, 31); }), kUnsupported, {"tensor.b", "type"}},
      {"TensorTypeMax", Patch([](I& i) { i.SetTensorType(1, kU32Max); }), kCorrupt, {"tensor.b", "type"}},
      {"NDims0", Patch([](I& i) { i.SetTensorNDims(0, 0); }), kCorrupt, {"tensor.a", "dimensions"}},
      {"NDims5Patched", Patch([](I& i) { i.SetTensorNDims(0, 5); }), kCorrupt, {"tensor.a", "dimensions"}},
      {"NDimsMax", Patch([](I& i) { i.SetTensorNDims(0, kU32Max); }), kCorrupt, {"tensor.a"}},
      {"NDims5Written", OneTensor(F32, {2, 1, 1, 1, 4}), kCorrupt, {"odd.tensor"}},
      {"ZeroDim", Patch([](I& i) { i.SetTensorDim(0, 1, 0); }), kCorrupt, {"tensor.a", "dimension 1"}},
      {"ZeroRowLength", OneTensor(F32, {0}), kCorrupt, {"odd.tensor"}},
      {"Dim2_63", Patch([](I& i) { i.SetTensorDim(0, 0, k2_63); }), kCorrupt, {"tensor.a"}},
      {"DimsProductOverflow", OneTensor(F32, {1ull << 32, 1ull << 32, 1ull << 32}), kCorrupt, {"odd.tensor"}},
      {"ByteSizeOverflowF32", OneTensor(F32, {uint64_t{1} << 62}), kCorrupt, {"odd.tensor"}},
      {"ByteSizeOverflowF32_2D", OneTensor(F32, {1ull << 31, 1ull << 31}), kCorrupt, {"odd.tensor"}},
      {"ByteSizeOverflowF64", OneTensor(TensorType::kF64, {uint64_t{1} << 61, 2}), kCorrupt, {"odd.tensor"}},
      {"RowNotWholeBlocks", OneTensor(TensorType::kQ8_0, {33, 2}, 68), kCorrupt, {"odd.tensor", "block"}},
      {"DuplicateTensorName", Extra([=](W& w) { w.AddTensor("tensor.a", F32, {8}, std::vector<uint8_t>(32)); }), kCorrupt, {"tensor.a"}},
      // Tensor data placement.
      {"OffsetPastEnd", Patch([](I& i) { i.SetTensorOffset(1, 1 << 20); }), kCorrupt, {"tensor.b"}},
      {"OffsetTailPastEnd", Patch([](I& i) { i.SetTensorOffset(1, 64); }), kCorrupt, {"tensor.b"}},
      {"OffsetWrapsAround", Patch([](I& i) { i.SetTensorOffset(1, kU64Max - 31); }), kCorrupt, {"tensor.b"}},
      {"OffsetMisaligned", Patch([](I& i) { i.SetTensorOffset(1, 33); }), kCorrupt, {"tensor.b", "alignment"}},
      {"OffsetsOverlap", Patch([](I& i) { i.SetTensorOffset(1, 0); }), kCorrupt, {"tensor.a", "tensor.b", "overlap"}},
      {"TruncatedInData", Bytes([] { I i = Base(); return i.Prefix(i.layout.data_end - 1); }), kCorrupt, {"tensor.b"}},
      {"TruncatedInHeaderPadding", Bytes([] { I i = Base(); return i.Prefix(i.layout.header_end); }), kCorrupt, {}},
  };
  // clang-format on
}

class GgufMalformedTest : public ::testing::TestWithParam<Case> {};

TEST_P(GgufMalformedTest, IsRejectedWithTheRightCodeAndField) {
  const Case& c = GetParam();
  const GgufImage img = c.make();
  // An exact-size heap copy, so any read past the end is an ASan error.
  const std::vector<uint8_t> bytes = img.bytes;
  auto f = GgufFile::FromMemory(bytes, "bad.gguf");
  ASSERT_FALSE(f.ok()) << c.name << " was accepted";
  EXPECT_EQ(f.status().code(), c.code) << f.status().ToString();
  const std::string& m = f.status().message();
  EXPECT_NE(m.find("bad.gguf"), std::string::npos) << m;
  for (const std::string& n : c.needles) {
    EXPECT_NE(m.find(n), std::string::npos) << "'" << n << "' not in: " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(All, GgufMalformedTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(GgufTruncationTest, EveryPrefixIsRejectedUntilTheLastTensorEnds) {
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w = BaseWriter();
    w.set_version(version);
    const GgufImage img = w.Build();
    for (size_t n = 0; n <= img.bytes.size(); ++n) {
      const std::vector<uint8_t> prefix = img.Prefix(n);
      auto f = GgufFile::FromMemory(prefix);
      if (n < img.layout.data_end) {
        ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes accepted";
        ASSERT_EQ(f.status().code(), kCorrupt) << n << ": " << f.status().ToString();
      } else {
        ASSERT_TRUE(f.ok()) << n << ": " << f.status().ToString();
        testing::TouchGguf(**f);
      }
    }
  }
}

TEST(GgufTruncationTest, FileWithoutTensorsMayEndAtItsHeader) {
  // Like the vocab-only files llama.cpp ships: no padding after the last key.
  GgufWriter w;
  w.AddString("general.architecture", "llama").AddStringArray("tok", {"a", "b"});
  const GgufImage img = w.Build();
  for (size_t n = 0; n < img.layout.header_end; ++n) {
    const std::vector<uint8_t> prefix = img.Prefix(n);
    ASSERT_FALSE(GgufFile::FromMemory(prefix).ok()) << n;
  }
  const std::vector<uint8_t> exact = img.Prefix(img.layout.header_end);
  auto f = GgufFile::FromMemory(exact);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata().size(), 2u);
}

TEST(GgufMutationTest, SingleByteChangesNeverCrash) {
  // Not a check of the codes (a changed byte can still leave a valid file): every accepted
  // result must be safe to read in full.
  const GgufImage img = Base();
  size_t accepted = 0;
  for (size_t pos = 0; pos < img.bytes.size(); ++pos) {
    for (uint8_t x : {uint8_t{0x00}, uint8_t{0xff}, uint8_t(img.bytes[pos] ^ 0x80),
                      uint8_t(img.bytes[pos] + 1)}) {
      std::vector<uint8_t> bytes = img.bytes;
      bytes[pos] = x;
      auto f = GgufFile::FromMemory(bytes);
      if (f.ok()) {
        ++accepted;
        testing::TouchGguf(**f);
      } else {
        EXPECT_NE(f.status().code(), StatusCode::kInternal) << f.status().ToString();
      }
    }
  }
  EXPECT_GT(accepted, 0u);  // changes inside tensor data are still valid files
}

}  // namespace
}  // namespace sparrow
