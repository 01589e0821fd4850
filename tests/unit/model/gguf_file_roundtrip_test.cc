// GgufFile reading what tests/util/gguf_writer wrote: every value type, v2 and v3, several
// alignments, tensor placement; the typed accessors' errors; the synthetic llama builder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "engine/kernels/dequantize.h"
#include "engine/model/gguf_file.h"
#include "tests/util/gguf_touch.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/synthetic_llama.h"

namespace sparrow {
namespace {

using testing::GgufImage;
using testing::GgufWriter;

std::unique_ptr<GgufFile> ParseOrFail(const GgufImage& img) {
  auto f = GgufFile::FromMemory(img.span());
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}
// The file points into the image, which must outlive it.
std::unique_ptr<GgufFile> ParseOrFail(const GgufImage&& img) = delete;

template <typename T>
std::vector<T> RawElems(const GgufArray& a) {
  std::vector<T> out(a.size);
  if (a.size) std::memcpy(out.data(), a.data, a.size * sizeof(T));
  return out;
}

struct RoundTripParam {
  uint32_t version;
  uint32_t alignment;  // 0: no general.alignment key
};

class GgufRoundTripTest : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(GgufRoundTripTest, EveryValueTypeAndTensorPlacement) {
  const auto [version, alignment] = GetParam();
  constexpr auto kI64Min = std::numeric_limits<int64_t>::min();
  constexpr auto kU64Max = std::numeric_limits<uint64_t>::max();
  const std::vector<int16_t> i16s = {-32768, 0, 32767};
  const std::vector<uint64_t> u64s = {0, kU64Max};
  const std::vector<double> f64s = {-1.5, 1e300};
  const std::vector<float> f32s = {0.25f, -3.0f, 1e-30f};
  const std::vector<bool> bools_src = {true, false, true};
  const bool bools[] = {true, false, true};
  const std::vector<std::string> strs = {"", "a", "\xe2\x96\x81hello", std::string("nul\0in", 6)};

  GgufWriter w(version);
  if (alignment) w.SetAlignment(alignment);
  w.AddU8("u8", 255).AddI8("i8", -128).AddU16("u16", 65535).AddI16("i16", -32768);
  w.AddU32("u32", 4294967295u).AddI32("i32", -2147483647 - 1).AddU64("u64", kU64Max);
  w.AddI64("i64", kI64Min).AddF32("f32", 0.1f).AddF64("f64", -2.5e-300);
  w.AddBool("bool.t", true).AddBool("bool.f", false);
  w.AddString("str", "h\xc3\xa9llo").AddString("str.empty", "");
  w.AddArray<uint8_t>("a.u8", {1, 2, 255}).AddArray<int8_t>("a.i8", {-1, 0, 1});
  w.AddArray<uint16_t>("a.u16", {1, 65535}).AddArray<int16_t>("a.i16", i16s);
  w.AddArray<uint32_t>("a.u32", {7}).AddArray<int32_t>("a.i32", {-7, 7});
  w.AddArray<uint64_t>("a.u64", u64s).AddArray<int64_t>("a.i64", {kI64Min, 3});
  w.AddArray<float>("a.f32", f32s).AddArray<double>("a.f64", f64s);
  w.AddArray<bool>("a.bool", std::span<const bool>(bools)).AddArray<int32_t>("a.empty", {});
  w.AddStringArray("a.str", strs).AddStringArray("a.str.empty", {});

  std::vector<uint8_t> q4(2 * 18);
  for (size_t i = 0; i < q4.size(); ++i) q4[i] = static_cast<uint8_t>(i * 7);
  const std::vector<float> f32_vals = {1, -2, 3, -4, 5, -6};
  w.AddTensorF32("t.f32", TensorType::kF32, {3, 2}, f32_vals);
  w.AddTensor("t.q4_0", TensorType::kQ4_0, {32, 2}, q4);
  w.AddTensor("t.i8", TensorType::kI8, {5}, {1, 2, 3, 4, 5});
  w.AddTensorF32("t.bf16", TensorType::kBF16, {2, 1, 1, 2}, {{1.0f, -2.0f, 0.5f, 3.0f}});
  const GgufImage img = w.Build();

  auto f = ParseOrFail(img);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), version);
  EXPECT_EQ(f->alignment(), alignment ? alignment : 32u);
  EXPECT_EQ(f->data_offset(), img.layout.data_start);
  ASSERT_EQ(f->metadata().size(), w.kv_count());
  EXPECT_EQ(f->metadata()[alignment ? 1 : 0].first, "u8");  // file order is kept

  EXPECT_EQ(f->Find("u8")->type, GgufValueType::kU8);
  EXPECT_EQ(*f->GetUInt("u8"), 255u);
  EXPECT_EQ(*f->GetInt("i8"), -128);
  EXPECT_EQ(f->Find("i8")->type, GgufValueType::kI8);
  EXPECT_EQ(*f->GetUInt("u16"), 65535u);
  EXPECT_EQ(*f->GetInt("i16"), -32768);
  EXPECT_EQ(*f->GetUInt("u32"), 4294967295u);
  EXPECT_EQ(*f->GetInt("i32"), -2147483648LL);
  EXPECT_EQ(*f->GetUInt("u64"), kU64Max);
  EXPECT_EQ(*f->GetInt("i64"), kI64Min);
  EXPECT_EQ(*f->GetFloat("f32"), static_cast<double>(0.1f));
  EXPECT_EQ(f->Find("f32")->type, GgufValueType::kF32);
  EXPECT_EQ(*f->GetFloat("f64"), -2.5e-300);
  EXPECT_TRUE(*f->GetBool("bool.t"));
  EXPECT_FALSE(*f->GetBool("bool.f"));
  EXPECT_EQ(*f->GetString("str"), "h\xc3\xa9llo");
  EXPECT_EQ(*f->GetString("str.empty"), "");
  for (const char* k : {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"}) {
    EXPECT_TRUE(f->Find(k)->IsInteger()) << k;
    EXPECT_FALSE(f->Find(k)->IsFloat()) << k;
  }
  EXPECT_TRUE(f->Find("f64")->IsFloat());
  EXPECT_FALSE(f->Find("bool.t")->IsInteger());

  auto arr = [&](const char* key, GgufValueType et, uint64_t n) -> const GgufArray& {
    auto a = f->GetArray(key);
    EXPECT_TRUE(a.ok()) << key;
    EXPECT_EQ((*a)->elem_type, et) << key;
    EXPECT_EQ((*a)->size, n) << key;
    return **a;
  };
  EXPECT_EQ(RawElems<uint8_t>(arr("a.u8", GgufValueType::kU8, 3)),
            (std::vector<uint8_t>{1, 2, 255}));
  EXPECT_EQ(RawElems<int16_t>(arr("a.i16", GgufValueType::kI16, 3)), i16s);
  EXPECT_EQ(RawElems<uint64_t>(arr("a.u64", GgufValueType::kU64, 2)), u64s);
  EXPECT_EQ(RawElems<double>(arr("a.f64", GgufValueType::kF64, 2)), f64s);
  EXPECT_EQ(RawElems<float>(arr("a.f32", GgufValueType::kF32, 3)), f32s);
  const GgufArray& ab = arr("a.bool", GgufValueType::kBool, 3);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(ab.data[i] != 0, bools_src[i]);
  EXPECT_EQ(*GgufFile::ArrayAsInts(arr("a.i8", GgufValueType::kI8, 3), "a.i8"),
            (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(*GgufFile::ArrayAsInts(arr("a.u16", GgufValueType::kU16, 2), "a.u16"),
            (std::vector<int64_t>{1, 65535}));
  EXPECT_EQ(*GgufFile::ArrayAsInts(arr("a.u32", GgufValueType::kU32, 1), "a.u32"),
            (std::vector<int64_t>{7}));
  EXPECT_EQ(*GgufFile::ArrayAsInts(arr("a.i32", GgufValueType::kI32, 2), "a.i32"),
            (std::vector<int64_t>{-7, 7}));
  EXPECT_EQ(*GgufFile::ArrayAsInts(arr("a.i64", GgufValueType::kI64, 2), "a.i64"),
            (std::vector<int64_t>{kI64Min, 3}));
  EXPECT_EQ(*GgufFile::ArrayAsFloats(arr("a.f64", GgufValueType::kF64, 2), "a.f64"),
            (std::vector<float>{-1.5f, static_cast<float>(1e300)}));
  EXPECT_EQ(*GgufFile::ArrayAsFloats(arr("a.f32", GgufValueType::kF32, 3), "a.f32"), f32s);
  EXPECT_TRUE(GgufFile::ArrayAsInts(arr("a.empty", GgufValueType::kI32, 0), "a.empty")->empty());
  const GgufArray& as = arr("a.str", GgufValueType::kString, 4);
  ASSERT_EQ(as.strings.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(as.strings[i], strs[i]);
  EXPECT_TRUE(arr("a.str.empty", GgufValueType::kString, 0).strings.empty());

  ASSERT_EQ(f->tensors().size(), 4u);
  const uint64_t align = alignment ? alignment : 32;
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.offset, img.layout.tensors[i].data_offset) << t.name;
    EXPECT_EQ(t.n_bytes, img.layout.tensors[i].data_size) << t.name;
    EXPECT_EQ(static_cast<uint64_t>(t.data - f->base()) % align, 0u) << t.name;
  }
  const GgufTensorInfo* tf = f->FindTensor("t.f32");
  ASSERT_NE(tf, nullptr);
  EXPECT_EQ(tf->dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(tf->rows(), 2u);
  EXPECT_EQ(tf->row_bytes(), 12u);
  EXPECT_EQ(std::memcmp(tf->data, f32_vals.data(), 24), 0);
  const GgufTensorInfo* tq = f->FindTensor("t.q4_0");
  ASSERT_NE(tq, nullptr);
  EXPECT_EQ(tq->type, TensorType::kQ4_0);
  EXPECT_EQ(tq->row_bytes(), 18u);
  EXPECT_EQ(std::vector<uint8_t>(tq->data, tq->data + tq->n_bytes), q4);
  const GgufTensorInfo* tb = f->FindTensor("t.bf16");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dims, (std::vector<uint64_t>{2, 1, 1, 2}));
  EXPECT_EQ(tb->n_bytes, 8u);
  EXPECT_EQ(tb->data[0] | tb->data[1] << 8, 0x3f80);  // 1.0 in bf16
  EXPECT_EQ(f->FindTensor("t.i8")->n_bytes, 5u);
  testing::TouchGguf(*f);
}

INSTANTIATE_TEST_SUITE_P(VersionsAndAlignments, GgufRoundTripTest,
                         ::testing::Values(RoundTripParam{3, 0}, RoundTripParam{2, 0},
                                           RoundTripParam{3, 1}, RoundTripParam{3, 8},
                                           RoundTripParam{2, 64}, RoundTripParam{3, 4096}));

TEST(GgufFileAccessorTest, MissingKeyIsNotFoundAndWrongTypeIsCorrupt) {
  GgufWriter w;
  w.AddU32("n", 7).AddI32("neg", -1).AddU64("big", 1ull << 63).AddString("s", "x");
  w.AddF32("f", 2.5f).AddU8("u8.bool", 1).AddBool("b", true).AddArray<float>("af", {1.0f});
  w.AddArray<uint64_t>("au64.big", {1ull << 63}).AddStringArray("astr", {"a"});
  const GgufImage img = w.Build();
  auto f = ParseOrFail(img);
  ASSERT_NE(f, nullptr);

  auto expect = [](const Status& s, StatusCode code, std::vector<std::string> needles) {
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const std::string& n : needles) {
      EXPECT_NE(s.message().find(n), std::string::npos) << "'" << n << "' not in " << s.message();
    }
  };
  expect(f->GetUInt("absent.key").status(), StatusCode::kNotFound, {"absent.key"});
  expect(f->GetString("absent.key").status(), StatusCode::kNotFound, {"absent.key"});
  expect(f->GetArray("absent.key").status(), StatusCode::kNotFound, {"absent.key"});
  expect(f->GetString("n").status(), StatusCode::kCorrupt, {"'n'", "string", "u32"});
  expect(f->GetUInt("s").status(), StatusCode::kCorrupt, {"'s'", "string"});
  expect(f->GetInt("f").status(), StatusCode::kCorrupt, {"'f'", "f32"});
  expect(f->GetFloat("s").status(), StatusCode::kCorrupt, {"'s'", "string"});
  expect(f->GetBool("u8.bool").status(), StatusCode::kCorrupt, {"u8.bool", "bool", "u8"});
  expect(f->GetArray("s").status(), StatusCode::kCorrupt, {"'s'", "array", "string"});
  expect(f->GetUInt("neg").status(), StatusCode::kCorrupt, {"neg"});
  expect(f->GetInt("big").status(), StatusCode::kCorrupt, {"big"});
  expect(f->GetUInt("b").status(), StatusCode::kCorrupt, {"'b'", "bool"});

  EXPECT_EQ(*f->GetInt("neg"), -1);
  EXPECT_EQ(*f->GetInt("n"), 7);
  EXPECT_EQ(*f->GetUInt("big"), 1ull << 63);
  EXPECT_DOUBLE_EQ(*f->GetFloat("n"), 7.0);
  EXPECT_DOUBLE_EQ(*f->GetFloat("neg"), -1.0);
  EXPECT_EQ(*f->GetUIntOr("absent.key", 11), 11u);
  EXPECT_EQ(*f->GetUIntOr("n", 11), 7u);
  expect(f->GetUIntOr("s", 11).status(), StatusCode::kCorrupt, {"'s'"});
  EXPECT_DOUBLE_EQ(*f->GetFloatOr("absent.key", 0.5), 0.5);
  expect(f->GetFloatOr("s", 0.5).status(), StatusCode::kCorrupt, {"'s'"});
  EXPECT_TRUE(*f->GetBoolOr("absent.key", true));
  EXPECT_TRUE(*f->GetBoolOr("b", false));
  expect(f->GetBoolOr("n", true).status(), StatusCode::kCorrupt, {"'n'"});

  const GgufArray& af = **f->GetArray("af");
  expect(GgufFile::ArrayAsInts(af, "af").status(), StatusCode::kCorrupt, {"af", "f32"});
  const GgufArray& as = **f->GetArray("astr");
  expect(GgufFile::ArrayAsInts(as, "astr").status(), StatusCode::kCorrupt, {"astr", "string"});
  expect(GgufFile::ArrayAsFloats(as, "astr").status(), StatusCode::kCorrupt, {"astr", "string"});
  const GgufArray& ab = **f->GetArray("au64.big");
  expect(GgufFile::ArrayAsInts(ab, "au64.big").status(), StatusCode::kCorrupt, {"au64.big"});
}

TEST(GgufWriterTest, HalfConversionRoundsToNearestEven) {
  using testing::FloatToHalf;
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);            // halfway past the max rounds to inf
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // tie, rounds to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);  // tie, rounds to even (up)
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);       // smallest subnormal
  EXPECT_EQ(FloatToHalf(2.9802322e-8f), 0x0000);       // half of it: tie to even (zero)
  EXPECT_EQ(FloatToHalf(6.1035156e-5f), 0x0400);       // smallest normal
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    ASSERT_EQ(FloatToHalf(testing::HalfToFloat(bits)), bits) << h;
  }
  EXPECT_EQ(testing::FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(testing::FloatToBf16(1.00390625f), 0x3f80);  // tie, rounds to even
}

TEST(SyntheticLlamaTest, BuildsTheShapesAndKeysLlamaNeeds) {
  testing::LlamaModelSpec spec;
  spec.n_vocab = 400;
  spec.n_embd = 48;
  spec.n_head = 4;
  spec.n_head_kv = 1;
  spec.head_dim = 16;  // != 48 / 4
  spec.n_ff = 40;
  spec.n_layer = 3;
  spec.weight_type = TensorType::kF16;
  spec.type_overrides = {{"ffn_down", TensorType::kBF16}};
  spec.alignment = 64;
  auto w = testing::MakeLlamaModel(spec);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const GgufImage img = w->Build();
  auto f = ParseOrFail(img);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(*f->GetString("general.architecture"), "llama");
  EXPECT_EQ(*f->GetUInt("llama.embedding_length"), 48u);
  EXPECT_EQ(*f->GetUInt("llama.block_count"), 3u);
  EXPECT_EQ(*f->GetUInt("llama.attention.head_count_kv"), 1u);
  EXPECT_EQ(*f->GetUInt("llama.attention.key_length"), 16u);
  EXPECT_EQ(*f->GetUInt("llama.rope.dimension_count"), 16u);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->GetFloat("llama.rope.freq_base")), 10000.0f);
  const GgufArray* tokens = *f->GetArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens->size, 400u);
  std::set<std::string_view> distinct(tokens->strings.begin(), tokens->strings.end());
  EXPECT_EQ(distinct.size(), 400u);
  EXPECT_EQ(tokens->strings[1], "<s>");
  EXPECT_EQ(tokens->strings[3 + 0x41], "<0x41>");
  EXPECT_EQ((*f->GetArray("tokenizer.ggml.scores"))->size, 400u);

  const auto shapes = testing::LlamaTensorShapes(spec);
  ASSERT_EQ(f->tensors().size(), shapes.size());
  EXPECT_EQ(shapes.size(), 3u + 9u * 3u);
  for (const auto& [name, dims] : shapes) {
    const GgufTensorInfo* t = f->FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dims, dims) << name;
  }
  EXPECT_EQ(f->FindTensor("blk.2.attn_q.weight")->dims, (std::vector<uint64_t>{48, 64}));
  EXPECT_EQ(f->FindTensor("blk.2.attn_output.weight")->dims, (std::vector<uint64_t>{64, 48}));
  EXPECT_EQ(f->FindTensor("blk.0.attn_k.weight")->dims, (std::vector<uint64_t>{48, 16}));
  EXPECT_EQ(f->FindTensor("blk.1.attn_q.weight")->type, TensorType::kF16);
  EXPECT_EQ(f->FindTensor("blk.1.ffn_down.weight")->type, TensorType::kBF16);
  EXPECT_EQ(f->FindTensor("blk.1.ffn_norm.weight")->type, TensorType::kF32);
  EXPECT_EQ(f->FindTensor("token_embd.weight")->type, TensorType::kF32);

  // The stored values are the documented generator's, converted to the tensor's type.
  const GgufTensorInfo* q = f->FindTensor("blk.1.attn_q.weight");
  const std::vector<float> want = testing::LlamaTensorValues(spec, "blk.1.attn_q.weight");
  ASSERT_EQ(want.size(), q->n_elements);
  for (size_t i = 0; i < want.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, q->data + 2 * i, 2);
    ASSERT_EQ(h, testing::FloatToHalf(want[i])) << i;
    ASSERT_LE(std::abs(want[i]), spec.weight_scale);
  }
  const std::vector<float> norm = testing::LlamaTensorValues(spec, "output_norm.weight");
  EXPECT_NEAR(norm[0], 1.0f, spec.weight_scale);
  // Different seeds give different weights; the same seed the same.
  testing::LlamaModelSpec other = spec;
  other.seed = 2;
  EXPECT_NE(testing::LlamaTensorValues(other, "blk.1.attn_q.weight"), want);
  EXPECT_EQ(testing::LlamaTensorValues(spec, "blk.1.attn_q.weight"), want);
  EXPECT_EQ(w->Build().bytes, img.bytes);
}

TEST(SyntheticLlamaTest, QuantizedWeightsDequantizeNearTheirValues) {
  for (TensorType type :
       {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ4_K, TensorType::kQ6_K}) {
    SCOPED_TRACE(std::string(TensorTypeName(type)));
    testing::LlamaModelSpec spec;
    spec.n_embd = 256;
    spec.n_ff = 512;
    spec.n_layer = 1;
    spec.weight_type = type;
    spec.output_type = TensorType::kQ6_K;
    auto w = testing::MakeLlamaModel(spec);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    const GgufImage img = w->Build();
    auto f = ParseOrFail(img);
    ASSERT_NE(f, nullptr);
    for (const char* name : {"blk.0.ffn_down.weight", "blk.0.attn_k.weight", "output.weight"}) {
      const GgufTensorInfo* t = f->FindTensor(name);
      ASSERT_NE(t, nullptr) << name;
      const TensorType want_type =
          std::string_view(name) == "output.weight" ? TensorType::kQ6_K : type;
      EXPECT_EQ(t->type, want_type) << name;
      const std::vector<float> want = testing::LlamaTensorValues(spec, name);
      const int64_t n = static_cast<int64_t>(t->dims[0]);
      std::vector<float> row(n);
      double max_err = 0;
      for (uint64_t r = 0; r < t->rows(); ++r) {
        kernels::DequantizeRow(t->type, t->data + r * t->row_bytes(), row.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          max_err = std::max(max_err, std::abs(double(row[i]) - want[r * n + i]));
        }
      }
      // 4-bit formats keep about 1/16 of the block's range; the values span +-weight_scale.
      EXPECT_LT(max_err, spec.weight_scale * 0.2) << name;
    }
  }
}

TEST(SyntheticLlamaTest, TiedOutputAndStoriesVocab) {
  testing::LlamaModelSpec spec;
  spec.tied_output = true;
  spec.vocab = testing::LlamaModelSpec::Vocab::kStories260K;
  spec.gguf_version = 2;
  auto w = testing::MakeLlamaModel(spec);
  if (!w.ok() && w.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "no shared models";
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const GgufImage img = w->Build();
  auto f = ParseOrFail(img);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->FindTensor("output.weight"), nullptr);
  EXPECT_EQ(f->FindTensor("token_embd.weight")->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ((*f->GetArray("tokenizer.ggml.tokens"))->strings[2], "</s>");
  EXPECT_EQ((*f->GetArray("tokenizer.ggml.token_type"))->elem_type, GgufValueType::kI32);
  EXPECT_EQ(*f->GetUInt("tokenizer.ggml.seperator_token_id"), 4294967295u);
}

}  // namespace
}  // namespace sparrow
