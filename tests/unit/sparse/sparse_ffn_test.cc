// SparseFfn and PowerInfer's files: the predictor's choice (a token alone reads only its neurons,
// a batch applies the same choice as a mask, bit for bit), the active-fraction counters, and the
// refusal of malformed PWRI files with the tensor named. The arithmetic against a plain reference
// is in forward_pass_test.cc (the pwri_* cases); PowerInfer's own outputs in golden_model_test.
#include "engine/sparse/sparse_ffn.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <random>

#include "engine/kernels/quantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sparse/ffn_factory.h"
#include "tests/util/synthetic_llama.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::LlamaModelSpec;

LlamaModelSpec PwriSpec(TensorType type, const char* arch) {
  LlamaModelSpec s;
  s.arch = arch;
  s.weight_type = s.embd_type = s.output_type = type;
  s.n_embd = 64;
  s.n_ff = 256;
  s.predictor_rank = 32;
  s.weight_scale = 0.1f;
  s.quantize = [](TensorType t, const float* src, void* dst, int64_t n) {
    kernels::QuantizeRow(t, src, dst, n);
  };
  return s;
}

Result<std::unique_ptr<Model>> LoadImage(const testing::GgufWriter& w, const std::string& name) {
  const std::string path = testing::TempPath(name + ".gguf");
  Status st = w.WriteFile(path);
  if (!st.ok()) return st;
  auto m = Model::Load(path);
  std::remove(path.c_str());  // the mapping stays valid after unlink
  return m;
}

std::unique_ptr<Model> LoadSpec(const LlamaModelSpec& spec, const std::string& name) {
  auto w = testing::MakeLlamaModel(spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  auto m = LoadImage(*w, name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

constexpr uint8_t kDecode = 1;

std::vector<float> RandomRows(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(PowerInferModelTest, ReadsTheFfnKindAndSparseTensors) {
  auto relu = LoadSpec(PwriSpec(TensorType::kF16, "llama"), "relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_TRUE(relu->config().powerinfer);
  EXPECT_EQ(relu->config().ffn_kind, FfnKind::kReluGlu);
  const LayerWeights& l = relu->weights().layers[0];
  EXPECT_EQ(l.ffn_down.data, nullptr);
  EXPECT_EQ(l.ffn_down_t.rows, 256);
  EXPECT_EQ(l.ffn_down_t.cols, 64);
  EXPECT_EQ(l.pred_fc1.rows, 32);
  EXPECT_EQ(l.pred_fc2.cols, 32);
  EXPECT_EQ(ForwardPass(*relu, nullptr, MakeDefaultFeedForward(*relu, nullptr)).ffn().mode(),
            "predictor");

  auto bamboo = LoadSpec(PwriSpec(TensorType::kQ4_0, "bamboo"), "bamboo");
  ASSERT_NE(bamboo, nullptr);
  EXPECT_EQ(bamboo->config().ffn_kind, FfnKind::kDReluGlu);

  // The same architectures in an ordinary GGUF run dense: llama is SwiGLU there.
  auto spec = PwriSpec(TensorType::kF32, "llama");
  spec.predictor_rank = 0;
  auto dense = LoadSpec(spec, "dense");
  ASSERT_NE(dense, nullptr);
  EXPECT_FALSE(dense->config().powerinfer);
  EXPECT_EQ(dense->config().ffn_kind, FfnKind::kSwiGlu);
  EXPECT_EQ(ForwardPass(*dense, nullptr, MakeDefaultFeedForward(*dense, nullptr)).ffn().mode(),
            "dense");
}

// A token computed alone (gathering its neurons' rows) and the same token inside a batch (whole
// matrices, masked) get the same bits: the serving path and the prompt path agree.
TEST(SparseFfnTest, AloneAndInABatchGiveTheSameBits) {
  for (TensorType type :
       {TensorType::kF32, TensorType::kF16, TensorType::kQ4_0, TensorType::kQ8_0}) {
    SCOPED_TRACE(std::string(TensorTypeName(type)));
    auto model = LoadSpec(PwriSpec(type, type == TensorType::kQ4_0 ? "bamboo" : "llama"), "pair");
    ASSERT_NE(model, nullptr);
    const int64_t d = model->config().n_embd, n = 7;
    const auto residual = RandomRows(n * d, 1), normed = RandomRows(n * d, 2);
    kernels::ThreadPool pool(2);
    auto plan = MakeSparsePlan(*model, {}, nullptr);
    ASSERT_TRUE(plan.ok() && *plan);
    SparseFfn batch(*model, *plan, &pool), alone(*model, *plan, nullptr);
    std::vector<float> want(n * d), got(n * d);
    ASSERT_TRUE(batch.Compute(1, {residual.data(), normed.data(), nullptr, n}, want.data()).ok());
    EXPECT_EQ(batch.counters().decode_tokens, 0);
    for (int64_t t = 0; t < n; ++t)
      ASSERT_TRUE(
          alone.Compute(1, {&residual[t * d], &normed[t * d], &kDecode, 1}, &got[t * d]).ok());
    for (int64_t i = 0; i < n * d; ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
    // Random weights put about half of the predictor's logits above 0.
    const FfnCounters c = alone.counters();
    EXPECT_EQ(c.decode_tokens, n);
    EXPECT_EQ(c.neurons_total, n * 256);
    EXPECT_GT(c.neurons_computed, c.neurons_total / 5);
    EXPECT_LT(c.neurons_computed, c.neurons_total * 4 / 5);
  }
}

// Several decoded tokens of a SwiGLU model under a threshold: with the batched dense down (the
// default from two tokens) each token keeps the neurons it has alone and its output differs from
// the alone one only by summation order; without it (0) the bits are the alone ones.
TEST(SparseFfnTest, BatchedDecodeTakesTheDenseDownWithTheSameNeurons) {
  auto spec = PwriSpec(TensorType::kF32, "llama");
  spec.predictor_rank = 0;  // an ordinary SwiGLU file
  auto model = LoadSpec(spec, "swiglu-batch");
  ASSERT_NE(model, nullptr);
  const int64_t d = 64, n = 3;
  auto plan = std::make_shared<SparsePlan>();
  plan->policy = SparsePolicy::kCats;
  plan->levels = std::make_shared<SparsityLevel>(
      std::vector<ThresholdLevel>{{0.5, std::vector<float>(2, 0.15f)}}, 0);
  plan->owned.resize(2);
  for (int il = 0; il < 2; ++il) {
    plan->down_t.push_back(
        DownRows(model->config(), model->weights().layers[il], std::nullopt, plan->owned[il]));
  }
  const auto residual = RandomRows(n * d, 5), normed = RandomRows(n * d, 6);
  const std::vector<uint8_t> decode(n, 1);
  SparseFfn alone(*model, plan, nullptr);
  std::vector<float> want(n * d);
  for (int64_t t = 0; t < n; ++t) {
    ASSERT_TRUE(
        alone.Compute(1, {&residual[t * d], &normed[t * d], &decode[0], 1}, &want[t * d]).ok());
  }
  const FfnCounters counted = alone.counters();
  EXPECT_GT(counted.neurons_computed, counted.neurons_total / 10);
  EXPECT_LT(counted.neurons_computed, counted.neurons_total * 9 / 10);

  SparseFfn batched(*model, plan, nullptr);
  std::vector<float> got(n * d);
  ASSERT_TRUE(
      batched.Compute(1, {residual.data(), normed.data(), decode.data(), n}, got.data()).ok());
  EXPECT_EQ(batched.counters().neurons_computed, counted.neurons_computed);
  float max_ref = 0, max_diff = 0;
  bool identical = true;
  for (int64_t i = 0; i < n * d; ++i) {
    max_ref = std::max(max_ref, std::fabs(want[i]));
    max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    identical &= got[i] == want[i];
  }
  EXPECT_LT(max_diff, 1e-5f * max_ref);
  EXPECT_FALSE(identical);  // the GEMM's order, not the rows'

  auto bits = std::make_shared<SparsePlan>(*plan);
  bits->dense_down_min_tokens = 0;
  for (int il = 0; il < 2; ++il) {
    bits->down_t[il].data = bits->owned[il].data();  // the copy's own rows
  }
  SparseFfn masked(*model, bits, nullptr);
  ASSERT_TRUE(
      masked.Compute(1, {residual.data(), normed.data(), decode.data(), n}, got.data()).ok());
  for (int64_t i = 0; i < n * d; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
  }
}

TEST(SparseFfnTest, TheThresholdDecidesWhichNeuronsRun) {
  auto spec = PwriSpec(TensorType::kF32, "llama");
  spec.sparse_threshold = 1e30f;  // no neuron
  auto none = LoadSpec(spec, "none");
  ASSERT_NE(none, nullptr);
  const int64_t d = 64;
  const auto residual = RandomRows(d, 3), normed = RandomRows(d, 4);
  SparseFfn ffn(*none, *MakeSparsePlan(*none, {}, nullptr), nullptr);
  std::vector<float> out(d, 1.0f);
  ASSERT_TRUE(ffn.Compute(0, {residual.data(), normed.data(), &kDecode, 1}, out.data()).ok());
  EXPECT_EQ(ffn.counters().neurons_computed, 0);
  for (float v : out) EXPECT_EQ(v, 0.0f);

  spec.sparse_threshold = -1e30f;  // every neuron
  auto all = LoadSpec(spec, "all");
  ASSERT_NE(all, nullptr);
  SparseFfn every(*all, *MakeSparsePlan(*all, {}, nullptr), nullptr);
  ASSERT_TRUE(every.Compute(0, {residual.data(), normed.data(), &kDecode, 1}, out.data()).ok());
  EXPECT_EQ(every.counters().neurons_computed, 256);
}

// Each way a PowerInfer file can disagree with itself is refused with the tensor named.
TEST(PowerInferModelTest, MalformedFilesNameTheTensor) {
  const auto spec = PwriSpec(TensorType::kQ4_0, "llama");
  struct Case {
    const char* what;
    std::function<void(testing::GgufWriter&)> change;
    const char* expect;
  };
  const std::vector<float> v256(64 * 256, 0.01f);
  const std::vector<Case> cases = {
      {"no predictor", [](auto& w) { w.RemoveTensor("blk.1.fc1.weight"); }, "blk.1.fc1.weight"},
      {"no fc2", [](auto& w) { w.RemoveTensor("blk.0.fc2.weight"); }, "blk.0.fc2.weight"},
      {"no down_t", [](auto& w) { w.RemoveTensor("blk.0.ffn_down_t.weight"); },
       "blk.0.ffn_down_t.weight"},
      {"fc2 of another rank",
       [&](auto& w) {
         w.RemoveTensor("blk.0.fc2.weight");
         w.AddTensorF32("blk.0.fc2.weight", TensorType::kF32, {64, 256}, v256);
       },
       "blk.0.fc2.weight"},
      {"dense down too",
       [&](auto& w) {
         std::vector<float> down(256 * 64, 0.01f);
         w.AddTensorF32("blk.1.ffn_down.weight", TensorType::kF32, {256, 64}, down);
       },
       "blk.1.ffn_down.weight"},
      {"down_t transposed wrongly",
       [&](auto& w) {
         w.RemoveTensor("blk.1.ffn_down_t.weight");
         std::vector<float> down(256 * 64, 0.01f);
         w.AddTensorF32("blk.1.ffn_down_t.weight", TensorType::kF32, {256, 64}, down);
       },
       "blk.1.ffn_down_t.weight"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto w = testing::MakeLlamaModel(spec);
    ASSERT_TRUE(w.ok());
    c.change(*w);
    auto m = LoadImage(*w, "bad");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(c.expect), std::string::npos) << m.status().ToString();
  }
  // A PWRI file whose predictor threshold is not a number.
  auto w = testing::MakeLlamaModel(spec);
  ASSERT_TRUE(w.ok());
  w->RemoveKey("powerinfer.sparse_threshold");
  w->AddF32("powerinfer.sparse_threshold", std::nanf(""));
  auto m = LoadImage(*w, "nan");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("powerinfer.sparse_threshold"), std::string::npos);
}

// PowerInfer's real files: every one in ../shared/pwri and the KJV ReLU model loads sparse.
TEST(PowerInferModelTest, SharedFilesLoad) {
  const std::string shared = testing::SharedDir();
  int loaded = 0;
  for (const char* f : {"pwri/models/pwri-llama-relu-f16.gguf", "pwri/models/pwri-bamboo-q4_0.gguf",
                        "kjv/models/kjv-relu-5m-pwri-q4_0.gguf"}) {
    const std::string path = shared + "/" + f;
    if (!testing::FileExists(path)) continue;
    auto m = Model::Load(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE((*m)->config().powerinfer);
    ++loaded;
  }
  if (loaded == 0) GTEST_SKIP() << "no PowerInfer files in " << shared;
}

}  // namespace
}  // namespace sparrow
