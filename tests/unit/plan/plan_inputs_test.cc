// PlanInputs from real model files (the KJV models in ../shared) and a converted synthetic one:
// the bytes by role add up to the file, the levels and cache points follow the model's kind and
// its profile, and the plans made from them are sane.
#include "engine/plan/plan_inputs.h"

#include <gtest/gtest.h>

#include "engine/model/expert_bundles.h"
#include "engine/model/model.h"
#include "engine/plan/cost_model.h"
#include "engine/plan/planner.h"
#include "engine/sparse/activation_profile.h"
#include "tests/unit/plan/plan_fixture.h"
#include "tests/util/converted_model.h"
#include "tests/util/synthetic_arch.h"
#include "tests/util/test_paths.h"

namespace sparrow::plan {
namespace {

std::unique_ptr<Model> LoadKjv(const std::string& name) {
  const std::string path = sparrow::testing::SharedDir() + "/kjv/models/" + name;
  if (!sparrow::testing::FileExists(path)) return nullptr;
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

uint64_t FileTensorBytes(const Model& m) {
  uint64_t n = 0;
  for (const GgufTensorInfo& t : m.file().tensors()) n += t.n_bytes;
  return n;
}

uint64_t Sum(const std::vector<TypedBytes>& v) {
  uint64_t n = 0;
  for (const TypedBytes& b : v) n += b.bytes;
  return n;
}

TEST(PlanInputsTest, DenseLlamaFileIsOneLevelWithTheFfnMappedWhole) {
  auto model = LoadKjv("kjv-llama-5m-q4_0.gguf");
  if (!model) GTEST_SKIP() << "the KJV models are not in " << sparrow::testing::SharedDir();
  const ModelConfig& c = model->config();
  auto in = MakePlanInputs(*model, nullptr, testing::TwoThreadHardware());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_FALSE(in->converted);
  EXPECT_FALSE(in->powerinfer);
  EXPECT_EQ(in->n_layer, c.n_layer);
  ASSERT_EQ(in->levels.size(), 1u);
  EXPECT_EQ(in->levels[0].sparsity, 0);
  EXPECT_FALSE(in->levels[0].gather);
  ASSERT_EQ(in->cache.size(), 1u);
  EXPECT_EQ(in->cache[0].fraction, 1.0);
  EXPECT_EQ(in->resident_bytes + in->bundle_bytes, FileTensorBytes(*model));
  // Q4_0 up and down rows of n_embd: 2 * n_embd / 32 * 18 bytes per neuron.
  EXPECT_EQ(Sum(in->neuron_rows), static_cast<uint64_t>(2 * c.n_embd / 32 * 18));
  // Keys and values in the KV pool's types: f16 (sparrowd's default) unless told.
  EXPECT_EQ(in->kv_bytes_per_token, static_cast<uint64_t>(c.n_layer * 2 * c.kv_dim() * 2));
  PlanInputsOptions q8;
  q8.kv_types = {TensorType::kQ8_0, TensorType::kQ8_0};
  auto in_q8 = MakePlanInputs(*model, nullptr, testing::TwoThreadHardware(), q8);
  ASSERT_TRUE(in_q8.ok()) << in_q8.status().ToString();
  EXPECT_EQ(in_q8->kv_bytes_per_token, static_cast<uint64_t>(c.n_layer * 2 * c.kv_dim() / 32 * 34));
  EXPECT_GT(Sum(in->dense), 0u);

  PlanRequest r;
  r.budget_bytes = 64 << 20;
  r.max_threads = 2;
  r.min_kv_bytes = in->kv_bytes_per_token * static_cast<uint64_t>(in->n_ctx);
  auto plan = SolvePlan(*in, r);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->neuron_cache_bytes, in->bundle_bytes);
  EXPECT_EQ(plan->flash_ms, 0);
  EXPECT_GT(plan->predicted_tokens_per_s, 0);
}

// A mixture-of-experts model is planned once converted: its records are experts, the router's
// n_expert_used of n_expert per token; the unconverted file is refused with the way out.
TEST(PlanInputsTest, ConvertedMoeFileCountsExpertsAsRecords) {
  const std::string src = sparrow::testing::TempPath("plan-olmoe-src.gguf");
  ASSERT_TRUE(
      sparrow::testing::WriteArchModel({sparrow::testing::ArchFamily::kOlmoe, 3}, src).ok());
  auto source = Model::Load(src);
  ASSERT_TRUE(source.ok());
  auto refused = MakePlanInputs(**source, nullptr, testing::TwoThreadHardware());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().ToString().find("sparrow convert"), std::string::npos);

  auto model = Model::Load(sparrow::testing::ConvertedCopy(src, "plan-olmoe"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  const LayerBundles& lb = (*model)->weights().bundles->layers[0];
  auto in = MakePlanInputs(**model, nullptr, testing::TwoThreadHardware());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_TRUE(in->converted);
  EXPECT_EQ(in->n_ff, c.n_expert);
  ASSERT_EQ(in->levels.size(), 1u);
  EXPECT_DOUBLE_EQ(in->levels[0].active_share,
                   static_cast<double>(c.n_expert_used) / static_cast<double>(c.n_expert));
  EXPECT_EQ(in->record_bytes, lb.record_bytes);
  EXPECT_EQ(Sum(in->neuron_rows),
            ExpertRawBytes(lb.gate_type, lb.up_type, lb.down_type, c.n_embd, c.n_ff_exp));
  EXPECT_EQ(in->resident_bytes + in->bundle_bytes, FileTensorBytes(**model));

  // Room for the resident weights and a few experts: the plan caches some, reads the rest.
  PlanRequest r;
  r.max_threads = 2;
  r.min_kv_bytes = in->kv_bytes_per_token * 512;
  r.budget_bytes = in->resident_bytes + in->scratch_bytes + r.min_kv_bytes + in->bundle_bytes / 3;
  auto plan = SolvePlan(*in, r);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_LT(plan->neuron_cache_bytes, in->bundle_bytes);
  EXPECT_GT(plan->flash_ms, 0);
}

// The probe's overhead per token was measured on one file: it applies to that file (named by a
// path to it anywhere) and to no other.
TEST(PlanInputsTest, TheOverheadPerTokenAppliesToTheFileItWasMeasuredOn) {
  auto model = LoadKjv("kjv-llama-5m-q4_0.gguf");
  if (!model) GTEST_SKIP() << "../shared/kjv is not here";
  HardwareProfile hw = testing::TwoThreadHardware();
  hw.store_token_overhead_seconds = 2e-3;
  hw.store_model = "/elsewhere/kjv-llama-5m-q4_0.gguf";
  auto in = MakePlanInputs(*model, nullptr, hw);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->token_overhead_s, 2e-3);
  const TokenCost with = Evaluate(*in, 2, in->cache.back(), in->levels[0], 0);
  in->token_overhead_s = 0;
  const TokenCost without = Evaluate(*in, 2, in->cache.back(), in->levels[0], 0);
  EXPECT_NEAR(with.token_s - without.token_s, 2e-3, 1e-12);
  hw.store_model = "kjv-llama-5m-f16.gguf";
  auto other = MakePlanInputs(*model, nullptr, hw);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->token_overhead_s, 0);
}

TEST(PlanInputsTest, ProfileLevelsAndMissCurveBecomeTheChoices) {
  auto model = LoadKjv("kjv-llama-5m-q4_0.gguf");
  if (!model) GTEST_SKIP() << "the KJV models are not in " << sparrow::testing::SharedDir();
  ActivationProfile p;
  p.n_layer = model->config().n_layer;
  p.n_ff = model->config().n_ff;
  p.levels = {0.25f, 0.5f};
  p.miss_fraction = {0.5f, 1.0f};
  p.miss_rate = {0.8f, 0.0f};
  p.miss_rate_hot_half = {0.6f, 0.0f};
  auto in = MakePlanInputs(*model, &p, testing::TwoThreadHardware());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  // Not converted: dense plus the profile's levels, each paying for the transposed down copy.
  ASSERT_EQ(in->levels.size(), 3u);
  EXPECT_DOUBLE_EQ(in->levels[2].sparsity, 0.5);
  EXPECT_DOUBLE_EQ(in->levels[2].active_share, 0.5);
  EXPECT_GT(in->levels[2].extra_bytes, 0u);
  EXPECT_EQ(in->cache.size(), 1u);  // the FFN is in memory whatever the curve says

  p.n_ff += 1;
  auto wrong = MakePlanInputs(*model, &p, testing::TwoThreadHardware());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("profile"), std::string::npos);
}

TEST(PlanInputsTest, PowerInferFileNeedsItsActiveShare) {
  auto model = LoadKjv("kjv-relu-5m-pwri-q4_0.gguf");
  if (!model) GTEST_SKIP() << "the KJV models are not in " << sparrow::testing::SharedDir();
  auto none = MakePlanInputs(*model, nullptr, testing::TwoThreadHardware());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--active-share"), std::string::npos);
  PlanInputsOptions o;
  o.active_share = 0.2;
  auto in = MakePlanInputs(*model, nullptr, testing::TwoThreadHardware(), o);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_TRUE(in->powerinfer);
  ASSERT_EQ(in->levels.size(), 1u);
  EXPECT_NEAR(in->levels[0].sparsity, 0.8, 1e-12);
  // Gate, up and down rows per neuron (the predictor chooses before the gate).
  const int64_t e = model->config().n_embd;
  EXPECT_EQ(Sum(in->neuron_rows), static_cast<uint64_t>(3 * e / 32 * 18));
  EXPECT_EQ(in->resident_bytes + in->bundle_bytes, FileTensorBytes(*model));
}

TEST(PlanInputsTest, ConvertedFileOffersTheUniformCurveWithoutAProfile) {
  const std::string path =
      sparrow::testing::WriteConvertedSyntheticModel("plan", TensorType::kQ8_0);
  ASSERT_FALSE(path.empty());
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  PlanInputsOptions o;
  o.active_share = 0.25;
  HardwareProfile no_flash = testing::TwoThreadHardware();
  no_flash.flash.clear();
  auto refused = MakePlanInputs(**model, nullptr, no_flash, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("profile-hw"), std::string::npos);

  auto in = MakePlanInputs(**model, nullptr, testing::TwoThreadHardware(), o);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_TRUE(in->converted);
  const NeuronBundleLayout& layout = *(*model)->weights().bundles;
  EXPECT_EQ(in->bundle_bytes, layout.bundle_bytes());
  EXPECT_EQ(in->record_bytes, layout.layers[0].record_bytes);
  EXPECT_EQ(in->cache.front().fraction, 0.0);
  EXPECT_EQ(in->cache.front().miss_rate, 1.0);
  EXPECT_EQ(in->cache.back().fraction, 1.0);
  EXPECT_EQ(in->cache.back().miss_rate, 0.0);

  // A budget between "no cache" and "every bundle" buys part of the cache.
  PlanRequest r;
  r.max_threads = 2;
  r.budget_bytes = FixedBytes(*in) + in->bundle_bytes / 2;
  auto plan = SolvePlan(*in, r);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_GT(plan->neuron_cache_bytes, 0u);
  EXPECT_LE(plan->neuron_cache_bytes, in->bundle_bytes / 2);
  EXPECT_LE(plan->memory_bytes, r.budget_bytes);
}

// A PowerInfer file converted with --calibrate carries the miss curve its own predictor made on
// the text; the planner takes it over the uniform one (a real predictor's choices repeat, so
// the same cache misses less) and plans a faster token for the same budget.
TEST(PlanInputsTest, CalibratedConversionBringsItsMeasuredMissCurve) {
  const std::string src = sparrow::testing::SharedDir() + "/kjv/models/kjv-relu-5m-pwri-q4_0.gguf";
  if (!sparrow::testing::FileExists(src)) GTEST_SKIP() << src << " is missing";
  tools::ConvertOptions c;
  c.model = src;
  c.output = sparrow::testing::TempPath("plan-calibrated.gguf");
  c.calibrate = sparrow::testing::SharedDir() + "/kjv/text/kjv-train.txt";
  c.calibrate_tokens = 128;
  c.threads = 2;
  ASSERT_TRUE(tools::ConvertToBundles(c).ok());
  auto model = Model::Load(c.output);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const NeuronBundleLayout& layout = *(*model)->weights().bundles;
  ASSERT_FALSE(layout.miss_fraction.empty());

  // The file also says how many neurons the predictor chose: no --active-share needed.
  ASSERT_GT(layout.active_share, 0.0f);
  ASSERT_LT(layout.active_share, 1.0f);
  auto in = MakePlanInputs(**model, nullptr, testing::TwoThreadHardware());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->levels.size(), 1u);
  EXPECT_FLOAT_EQ(static_cast<float>(in->levels[0].active_share), layout.active_share);
  EXPECT_NE(in->miss_curve_source.find("converted file"), std::string::npos);
  // No cache first (the file's curve starts at 5%), then the file's points as written.
  ASSERT_EQ(in->cache.size(), layout.miss_fraction.size() + 1);
  EXPECT_EQ(in->cache[0].fraction, 0.0);
  EXPECT_EQ(in->cache[0].miss_rate, 1.0);
  for (size_t i = 0; i < layout.miss_fraction.size(); ++i) {
    EXPECT_FLOAT_EQ(static_cast<float>(in->cache[i + 1].fraction), layout.miss_fraction[i]);
    EXPECT_FLOAT_EQ(static_cast<float>(in->cache[i + 1].miss_rate), layout.miss_rate[i]);
  }
  const CachePoint half = in->cache[10];
  EXPECT_NEAR(half.fraction, 0.5, 1e-6);
  EXPECT_LT(half.miss_rate, 0.5);
}

}  // namespace
}  // namespace sparrow::plan
