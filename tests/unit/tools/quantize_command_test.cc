#include "engine/tools/quantize_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/model/gguf_file.h"
#include "engine/tools/quantize_plan.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

using testing::GgufWriter;
using testing::ReadFileOrDie;
using testing::TempPath;

std::vector<float> Values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A 2-layer, 8-expert model in the qwen3moe layout, small enough to check every value: the
// experts' down rows (128) are shorter than a k-quant block, so the fallbacks show.
std::string WriteMoeModel(const std::string& name, int64_t q_cols = 256) {
  GgufWriter w;
  w.AddString("general.architecture", "qwen3moe")
      .AddString("general.name", "quantize test")
      .AddU32("general.file_type", 0)
      .AddU32("qwen3moe.block_count", 2)
      .AddU32("qwen3moe.expert_count", 8)
      .AddArray<float>("test.floats", {1.5f, -2.0f});
  uint32_t seed = 1;
  auto add = [&](const std::string& t, std::vector<uint64_t> dims) {
    size_t n = 1;
    for (uint64_t d : dims) n *= d;
    w.AddTensorF32(t, TensorType::kF32, dims, Values(n, seed++));
  };
  add("token_embd.weight", {256, 16});
  add("output_norm.weight", {256});
  add("output.weight", {256, 16});
  add("rope_freqs.weight", {32});
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", {256});
    add(p + "attn_q.weight", {static_cast<uint64_t>(q_cols), 8});
    add(p + "attn_k.weight", {256, 8});
    add(p + "attn_v.weight", {256, 8});
    add(p + "attn_k_norm.weight", {64});
    add(p + "attn_output.weight", {256, 8});
    add(p + "ffn_gate_inp.weight", {256, 8});
    add(p + "ffn_gate_exps.weight", {256, 4, 8});
    add(p + "ffn_up_exps.weight", {256, 4, 8});
    add(p + "ffn_down_exps.weight", {128, 4, 8});
  }
  const std::string path = TempPath(name);
  EXPECT_TRUE(w.Build().WriteFile(path).ok());
  return path;
}

std::unique_ptr<GgufFile> Quantize(const std::string& in, const std::string& type,
                                   const std::string& out) {
  auto sum = QuantizeModel({in, out, type});
  EXPECT_TRUE(sum.ok()) << sum.status().ToString();
  auto f = GgufFile::Open(out);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

// A fresh MoE model (files named after `tag`) quantized to `type`.
std::unique_ptr<GgufFile> QuantizeFresh(const std::string& tag, const std::string& type) {
  const std::string in = WriteMoeModel("quant-" + tag + "-f32.gguf");
  return Quantize(in, type, TempPath("quant-" + tag + "-" + type + ".gguf"));
}

TensorType TypeOf(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? t->type : TensorType::kI8;
}

// What llama-quantize (d32676d7) writes for the test model, per file type.
struct ExpectedTypes {
  const char* type;
  uint32_t file_type;  // general.file_type
  std::vector<std::pair<const char*, TensorType>> tensors;
};

const std::vector<ExpectedTypes>& Expectations() {
  using TT = TensorType;
  static const std::vector<ExpectedTypes> kExpected = {
      {"q4_k_m",
       15,
       {{"output.weight", TT::kQ6_K},
        {"token_embd.weight", TT::kQ4_K},
        {"blk.0.attn_q.weight", TT::kQ4_K},
        // 8 experts: attn_k and attn_v Q8_0, attn_output Q5_K.
        {"blk.0.attn_k.weight", TT::kQ8_0},
        {"blk.1.attn_v.weight", TT::kQ8_0},
        {"blk.0.attn_output.weight", TT::kQ5_K},
        {"blk.0.ffn_gate_exps.weight", TT::kQ4_K},
        {"blk.1.ffn_up_exps.weight", TT::kQ4_K},
        // Rows of 128: Q4_K falls back to Q5_0, the last layer's Q6_K (use_more_bits) to Q8_0.
        {"blk.0.ffn_down_exps.weight", TT::kQ5_0},
        {"blk.1.ffn_down_exps.weight", TT::kQ8_0},
        // Left as they are: 1-D tensors, the router, rope factors.
        {"output_norm.weight", TT::kF32},
        {"rope_freqs.weight", TT::kF32},
        {"blk.0.attn_k_norm.weight", TT::kF32},
        {"blk.1.ffn_gate_inp.weight", TT::kF32}}},
      {"q4_0",
       2,
       {{"output.weight", TT::kQ6_K},
        {"token_embd.weight", TT::kQ4_0},
        {"blk.0.attn_v.weight", TT::kQ8_0},
        {"blk.0.attn_output.weight", TT::kQ4_0},
        {"blk.1.ffn_down_exps.weight", TT::kQ4_0}}},
      {"f16",
       1,
       {{"output.weight", TT::kF16},
        {"blk.0.ffn_down_exps.weight", TT::kF16},
        {"blk.0.ffn_gate_inp.weight", TT::kF32}}},
  };
  return kExpected;
}

TEST(QuantizeModel, PicksLlamaQuantizeTypesAndCopiesMetadata) {
  for (const ExpectedTypes& e : Expectations()) {
    auto f = QuantizeFresh(e.type, e.type);
    ASSERT_NE(f, nullptr) << e.type;
    EXPECT_EQ(*f->GetUInt("general.file_type"), e.file_type) << e.type;
    EXPECT_EQ(*f->GetUInt("general.quantization_version"), 2u);
    EXPECT_EQ(*f->GetString("general.name"), "quantize test");
    EXPECT_NE(f->Find("test.floats"), nullptr);
    for (const auto& [name, type] : e.tensors) {
      EXPECT_EQ(TypeOf(*f, name), type) << e.type << " " << name;
    }
    EXPECT_EQ(f->FindTensor("blk.1.ffn_down_exps.weight")->dims,
              (std::vector<uint64_t>{128, 4, 8}));
  }
}

// Every value survives the round trip within the file type's error (values in [-1, 1]);
// copied tensors are exact.
void ExpectRoundTrip(const std::string& type, float tolerance) {
  const std::string in = WriteMoeModel("quant-moe-f32-" + type + ".gguf");
  auto f = Quantize(in, type, TempPath("quant-moe-rt-" + type + ".gguf"));
  ASSERT_NE(f, nullptr);
  auto src = GgufFile::Open(in);
  ASSERT_TRUE(src.ok());
  for (const GgufTensorInfo& s : (*src)->tensors()) {
    const GgufTensorInfo* q = f->FindTensor(s.name);
    ASSERT_NE(q, nullptr) << s.name;
    ASSERT_EQ(q->dims, s.dims) << s.name;
    const int64_t cols = static_cast<int64_t>(s.dims[0]);
    std::vector<float> row(cols);
    const auto* x = reinterpret_cast<const float*>(s.data);
    for (uint64_t r = 0; r < s.rows(); ++r) {
      kernels::DequantizeRow(q->type, q->data + r * q->row_bytes(), row.data(), cols);
      for (int64_t c = 0; c < cols; ++c) {
        const float want = x[r * cols + c];
        if (q->type == TensorType::kF32) {
          ASSERT_EQ(row[c], want) << s.name;
        } else {
          ASSERT_NEAR(row[c], want, tolerance) << type << " " << s.name << " row " << r;
        }
      }
    }
  }
}

// Q8_0: half a step of amax/127 plus the fp16 scale's rounding. Q4_0 reaches only 7/8 of the
// amax on the side opposite its sign (an error of 1/8 there); Q4_K's step is about 2/15.
TEST(QuantizeModel, RoundTripsValues) {
  ExpectRoundTrip("q8_0", 0.5f / 127 + 1e-3f);
  ExpectRoundTrip("q4_0", 0.13f);
  ExpectRoundTrip("q4_k_m", 0.13f);
}

TEST(QuantizeModel, IsDeterministic) {
  const std::string in = WriteMoeModel("quant-moe-f32-d.gguf");
  const std::string a = TempPath("quant-moe-q4_k_m-a.gguf");
  const std::string b = TempPath("quant-moe-q4_k_m-b.gguf");
  ASSERT_NE(Quantize(in, "q4_k_m", a), nullptr);
  ASSERT_NE(Quantize(in, "q4_k_m", b), nullptr);
  EXPECT_EQ(ReadFileOrDie(a), ReadFileOrDie(b));
}

TEST(QuantizeModel, ErrorsNameTheFileAndTensor) {
  const std::string in = WriteMoeModel("quant-moe-odd.gguf", /*q_cols=*/48);
  const std::string out = TempPath("quant-moe-odd-q4_0.gguf");
  auto sum = QuantizeModel({in, out, "q4_0"});
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().message().find(in), std::string::npos) << sum.status().ToString();
  EXPECT_NE(sum.status().message().find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_FALSE(testing::FileExists(out));
  auto bad_type = QuantizeModel({in, out, "q3_k"});
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("q3_k"), std::string::npos);
}

TEST(QuantizePlan, DenseQ4KMSpendsMoreBitsOnSomeLayers) {
  const QuantizeModelFacts dense{8, 0, false};
  const QuantizeModelFacts tied{8, 0, true};
  auto type = [](const char* name, int64_t cols, const QuantizeModelFacts& facts) {
    return *QuantizedType(ModelFileType::kQ4_K_M, name, cols, facts);
  };
  // use_more_bits(i, 8): layers 0, 3, 6, 7.
  EXPECT_EQ(type("blk.0.attn_v.weight", 256, dense), TensorType::kQ6_K);
  EXPECT_EQ(type("blk.1.attn_v.weight", 256, dense), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.3.ffn_down.weight", 512, dense), TensorType::kQ6_K);
  EXPECT_EQ(type("blk.3.attn_k.weight", 256, dense), TensorType::kQ4_K);
  EXPECT_EQ(type("blk.3.attn_output.weight", 256, dense), TensorType::kQ4_K);
  EXPECT_EQ(type("token_embd.weight", 256, dense), TensorType::kQ4_K);
  EXPECT_EQ(type("token_embd.weight", 256, tied), TensorType::kQ6_K);
  EXPECT_EQ(type("blk.2.ffn_gate.weight", 96, dense), TensorType::kQ5_0);
  EXPECT_FALSE(IsQuantizable("blk.0.attn_norm.weight", std::vector<uint64_t>{256, 1}));
  EXPECT_FALSE(IsQuantizable("blk.0.attn_q.bias", std::vector<uint64_t>{256, 4}));
  EXPECT_FALSE(IsQuantizable("blk.0.attn_q.weight", std::vector<uint64_t>{256}));
  EXPECT_TRUE(IsQuantizable("blk.0.ffn_up_exps.weight", std::vector<uint64_t>{256, 4, 8}));
}

}  // namespace
}  // namespace sparrow::tools
