// `sparrow profile` on the trained KJV model (real activations), the profile format's round trip
// and validation, and the threshold policies it feeds: the measured share of neurons a decoded
// token computes follows the asked-for sparsity, and every error names the flag or file.
#include "engine/tools/profile_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/bundle_convert.h"
#include "tests/util/test_paths.h"

namespace sparrow::tools {
namespace {

std::string KjvPath(const std::string& rel) {
  return testing::SharedDir() + "/kjv/" + rel;
}

SparsityOptions Opts(double sparsity, const std::string& profile, ThresholdMethod method) {
  SparsityOptions o;
  o.sparsity = sparsity;
  o.profile_path = profile;
  o.method = method;
  return o;
}

// Greedy decoding of `n` tokens after `prompt` in a fresh cache: the tokens, and every step's
// logits appended to `all`.
std::vector<int32_t> DecodeGreedy(ForwardPass& fp, const Model& m,
                                  const std::vector<int32_t>& prompt, int n,
                                  std::vector<float>* all) {
  ContiguousKvCache cache(m.config().n_layer, 128, m.config().kv_dim());
  std::vector<float> logits;
  std::vector<int32_t> out;
  EXPECT_TRUE(fp.Run(prompt, 0, cache, false, &logits).ok());
  for (int i = 0; i < n; ++i) {
    all->insert(all->end(), logits.begin(), logits.end());
    out.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    EXPECT_TRUE(
        fp.Run({&out.back(), 1}, static_cast<int64_t>(prompt.size()) + i, cache, false, &logits)
            .ok());
  }
  return out;
}

// The KJV Q8_0 model and its conversion by `co` (model and output filled in here), loaded, and
// `text` tokenized; empty models (and a failed test) on error.
struct ConvertedPair {
  std::unique_ptr<Model> src, conv;
  std::vector<int32_t> prompt;
};
ConvertedPair ConvertKjvQ8(ConvertOptions co, const std::string& output, const std::string& text) {
  ConvertedPair p;
  co.model = KjvPath("models/kjv-llama-5m-q8_0.gguf");
  co.output = testing::TempPath(output);
  const auto sum = ConvertToBundles(co);
  EXPECT_TRUE(sum.ok()) << sum.status().ToString();
  auto src = Model::Load(co.model);
  auto conv = Model::Load(co.output);
  EXPECT_TRUE(src.ok() && conv.ok());
  if (!sum.ok() || !src.ok() || !conv.ok()) return p;
  auto tok = LoadTokenizer((*src)->file());
  EXPECT_TRUE(tok.ok());
  if (!tok.ok()) return p;
  p.prompt = (*tok)->Tokenize(text, true);
  p.src = std::move(src).value();
  p.conv = std::move(conv).value();
  return p;
}

// One profile for the whole suite: calibrating takes a few seconds.
class ProfileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::FileExists(KjvPath("models/kjv-llama-5m-f32.gguf"))) return;
    ProfileOptions o;
    o.model = KjvPath("models/kjv-llama-5m-f32.gguf");
    o.text_file = KjvPath("text/kjv-train.txt");
    o.max_tokens = 8 * 256;
    o.threads = 2;
    auto p = CalibrateProfile(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    profile_ = new ActivationProfile(std::move(p).value());
    path_ = new std::string(testing::TempPath("kjv.profile"));
    ASSERT_TRUE(WriteActivationProfile(*profile_, *path_).ok());
  }
  static void TearDownTestSuite() {
    if (path_) std::remove(path_->c_str());
    delete profile_;
    delete path_;
  }
  void SetUp() override {
    if (!profile_) GTEST_SKIP() << "the KJV models are not in " << testing::SharedDir();
  }
  static ActivationProfile* profile_;
  static std::string* path_;
};
ActivationProfile* ProfileTest::profile_ = nullptr;
std::string* ProfileTest::path_ = nullptr;

TEST_F(ProfileTest, ThresholdsRiseWithTheLevelAndSkipThatShare) {
  const ActivationProfile& p = *profile_;
  EXPECT_EQ(p.n_layer, 6);
  EXPECT_EQ(p.n_ff, 768);
  EXPECT_EQ(p.tokens, 8 * 256);
  ASSERT_EQ(p.levels.size(), 19u);
  for (int64_t l = 0; l < p.n_layer; ++l) {
    for (size_t k = 1; k < p.levels.size(); ++k) {
      EXPECT_GT(p.cats_threshold[k * p.n_layer + l], p.cats_threshold[(k - 1) * p.n_layer + l]);
    }
    // On the calibration text itself, level k's threshold leaves about 1 - level of the
    // (token, neuron) pairs active.
    for (size_t k = 0; k < p.levels.size(); ++k) {
      double active = 0;
      for (int64_t i = 0; i < p.n_ff; ++i) active += p.frequency[(k * p.n_layer + l) * p.n_ff + i];
      EXPECT_NEAR(active / p.n_ff, 1 - p.levels[k], 0.02) << "layer " << l << " level " << k;
    }
  }
  // A trained SwiGLU model has almost no hot set (kjv/README.md): ~75% of the neurons carry 80%
  // of the activations at 50% sparsity.
  const double hot = p.hot80[9 * p.n_layer + 0];
  EXPECT_GT(hot, 0.6);
  EXPECT_LT(hot, 0.9);
}

TEST_F(ProfileTest, RoundTripsThroughTheFile) {
  auto read = ReadActivationProfile(*path_);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->model_name, profile_->model_name);
  EXPECT_EQ(read->tokens, profile_->tokens);
  EXPECT_EQ(read->levels, profile_->levels);
  EXPECT_EQ(read->cats_threshold, profile_->cats_threshold);
  EXPECT_EQ(read->teal_threshold, profile_->teal_threshold);
  EXPECT_EQ(read->hot80, profile_->hot80);
  EXPECT_EQ(read->frequency, profile_->frequency);
  EXPECT_EQ(read->miss_fraction, profile_->miss_fraction);
  EXPECT_EQ(read->miss_rate, profile_->miss_rate);
  EXPECT_EQ(read->miss_level, profile_->miss_level);
  EXPECT_NE(DescribeProfile(*read).find("6 layers of 768 FFN neurons"), std::string::npos);
  EXPECT_NE(DescribeProfile(*read).find("miss curve"), std::string::npos);
}

// sparrow convert --profile: each layer's records hold the most frequently active neurons first
// (at the level nearest --hot-level), and the converted model computes the same logits.
TEST_F(ProfileTest, ConvertPutsHotNeuronsFirst) {
  ConvertOptions co;
  co.model = KjvPath("models/kjv-llama-5m-f32.gguf");
  co.output = testing::TempPath("kjv-hot-first.gguf");
  co.profile = *path_;
  auto sum = ConvertToBundles(co);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_TRUE(sum->ordered_by_profile);
  auto m = Model::Load(co.output);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ActivationProfile& p = *profile_;
  size_t half = 0;
  while (std::abs(p.levels[half] - 0.5f) > 1e-3f) ++half;
  bool reordered = false;
  for (int64_t l = 0; l < p.n_layer; ++l) {
    const std::vector<int32_t>& ids = (*m)->weights().bundles->layers[l].neuron_ids;
    const float* f = &p.frequency[(half * p.n_layer + l) * p.n_ff];
    for (int64_t k = 1; k < p.n_ff; ++k) {
      ASSERT_GE(f[ids[k - 1]], f[ids[k]]) << "layer " << l << " record " << k;
      reordered |= ids[k] != k;
    }
  }
  EXPECT_TRUE(reordered);
  auto src = Model::Load(co.model);
  ASSERT_TRUE(src.ok());
  std::vector<float> a, b;
  for (auto [model, out] : {std::pair{src->get(), &a}, std::pair{m->get(), &b}}) {
    ForwardPass fp(*model, nullptr, MakeDefaultFeedForward(*model, nullptr));
    ContiguousKvCache cache(6, 64, model->config().kv_dim());
    const std::vector<int32_t> prompt = {1, 40, 50, 60, 70};
    ASSERT_TRUE(fp.Run(prompt, 0, cache, false, out).ok());
  }
  float max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(a[i]));
    max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  }
  EXPECT_LT(max_diff, 1e-4f * max_ref);
}

// The miss curve of the calibration tokens (the first 256) at 50%: ten cache sizes, fewer of the
// neurons used read from flash as the cache grows, none but first uses with every bundle cached.
TEST_F(ProfileTest, MissCurveFallsAsTheCacheGrows) {
  const ActivationProfile& p = *profile_;
  EXPECT_FLOAT_EQ(p.miss_level, 0.5f);
  ASSERT_EQ(p.miss_fraction.size(), 10u);
  ASSERT_EQ(p.miss_rate.size(), 10u);
  EXPECT_FLOAT_EQ(p.miss_fraction.back(), 1.0f);
  for (size_t i = 1; i < p.miss_rate.size(); ++i) {
    EXPECT_LE(p.miss_rate[i], p.miss_rate[i - 1] + 0.02f) << i;
  }
  // At 5% of the bundles the cache holds a tenth of one token's active set: nearly all missed.
  EXPECT_GT(p.miss_rate.front(), 0.5f);
  EXPECT_LT(p.miss_rate.back(), 0.05f);
  EXPECT_GT(p.miss_rate.front(), p.miss_rate.back() + 0.3f);
  // The other policies on the same trace, read back from the file: a hot half never does worse
  // than the LRU at the smallest size, where the LRU thrashes.
  ASSERT_EQ(p.miss_rate_window.size(), 10u);
  ASSERT_EQ(p.miss_rate_hot_half.size(), 10u);
  EXPECT_LT(p.miss_rate_hot_half.front(), p.miss_rate.front());
  EXPECT_LT(p.miss_rate_window.back(), 0.05f);
  EXPECT_LT(p.miss_rate_hot_half.back(), 0.05f);
  auto back = ReadActivationProfile(*path_);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->miss_rate_window, p.miss_rate_window);
  EXPECT_EQ(back->miss_rate_hot_half, p.miss_rate_hot_half);
  // Belady's optimum bounds every policy at every size (within a hair: it minimizes the warm-up's
  // misses too); it and the decaying LFU are in the file.
  ASSERT_EQ(p.miss_rate_optimum.size(), 10u);
  ASSERT_EQ(p.miss_rate_lfu.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    for (const std::vector<float>* v :
         {&p.miss_rate, &p.miss_rate_window, &p.miss_rate_hot_half, &p.miss_rate_lfu}) {
      EXPECT_LE(p.miss_rate_optimum[i], (*v)[i] + 1e-3f) << i;
    }
  }
  EXPECT_EQ(back->miss_rate_optimum, p.miss_rate_optimum);
  EXPECT_EQ(back->miss_rate_lfu, p.miss_rate_lfu);
  const std::string shown = DescribeProfile(*back);
  EXPECT_NE(shown.find("optimum (Belady)"), std::string::npos) << shown;
}

// Decoding held-out text token by token, the share of neurons computed follows --sparsity.
TEST_F(ProfileTest, DecodedTokensComputeTheAskedShare) {
  auto model = Model::Load(KjvPath("models/kjv-llama-5m-q8_0.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto tok = LoadTokenizer((*model)->file());
  ASSERT_TRUE(tok.ok());
  std::vector<int32_t> ids =
      (*tok)->Tokenize(testing::ReadFileOrDie(KjvPath("text/kjv-eval.txt")).substr(0, 2000), true);
  ids.resize(std::min<size_t>(ids.size(), 96));
  kernels::ThreadPool pool(2);
  for (auto [method, sparsity] :
       {std::pair{ThresholdMethod::kCats, 0.5}, std::pair{ThresholdMethod::kCats, 0.7},
        std::pair{ThresholdMethod::kTealDown, 0.5}}) {
    const SparsityOptions o = Opts(sparsity, *path_, method);
    auto plan = MakeSparsePlan(**model, o, &pool);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ForwardPass fp(**model, &pool, MakeFeedForward(**model, *plan, &pool));
    ContiguousKvCache cache((*model)->config().n_layer, 128, (*model)->config().kv_dim());
    std::vector<float> logits;
    for (size_t t = 0; t < ids.size(); ++t)
      ASSERT_TRUE(fp.Run({&ids[t], 1}, t, cache, false, &logits).ok());
    const FfnCounters c = fp.ffn().counters();
    const double active = static_cast<double>(c.neurons_computed) / c.neurons_total;
    std::printf("[profile] %s at %.2f: %.3f of the neurons computed per token\n",
                std::string(fp.ffn().mode()).c_str(), sparsity, active);
    EXPECT_NEAR(active, 1 - sparsity, 0.08);
    EXPECT_EQ(c.decode_tokens, static_cast<int64_t>(ids.size()) * 6);
  }
}

// GeGLU (Gemma): profiles measure |gelu(gate)|, and CATS and TEAL skip the asked share of the
// neurons of decoded tokens. Random weights (../shared/arch): the shares, not the quality.
TEST(GeGluProfileTest, CalibratesAndSkipsTheAskedShare) {
  const std::string model_path = testing::SharedDir() + "/arch/models/synth-gemma3-f32.gguf";
  if (!testing::FileExists(model_path)) GTEST_SKIP() << model_path << " absent";
  ProfileOptions po;
  po.model = model_path;
  po.text_file = KjvPath("text/kjv-train.txt");
  po.max_tokens = 256;
  po.threads = 2;
  auto p = CalibrateProfile(po);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const std::string path = testing::TempPath("gemma3.profile");
  ASSERT_TRUE(WriteActivationProfile(*p, path).ok());
  auto model = Model::Load(model_path);
  ASSERT_TRUE(model.ok());
  kernels::ThreadPool pool(2);
  for (ThresholdMethod method : {ThresholdMethod::kCats, ThresholdMethod::kTealDown}) {
    auto plan = MakeSparsePlan(**model, Opts(0.5, path, method), &pool);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ForwardPass fp(**model, &pool, MakeFeedForward(**model, *plan, &pool));
    ContiguousKvCache cache((*model)->config().n_layer, 64, (*model)->config().kv_dim());
    std::vector<float> logits;
    for (int32_t t = 0; t < 48; ++t) {
      const int32_t id = (t * 37 + 5) % 512;
      ASSERT_TRUE(fp.Run({&id, 1}, t, cache, false, &logits).ok());
    }
    const FfnCounters c = fp.ffn().counters();
    const double active = static_cast<double>(c.neurons_computed) / c.neurons_total;
    std::printf("[profile] gemma3 %s at 0.5: %.3f of the neurons computed per token\n",
                std::string(fp.ffn().mode()).c_str(), active);
    EXPECT_NEAR(active, 0.5, 0.1);
  }
  std::remove(path.c_str());
}

// In a batch mixing decoded and prompt tokens (continuous batching), each decoded token computes
// the neurons it computes decoded alone (bit for bit when the batch's down rows are accumulated
// per token) and each prompt token the dense FFN.
TEST_F(ProfileTest, MixedBatchesGiveEachTokenItsOwnResult) {
  // F32: the transposed down copy holds the same values, so the two down paths differ only in
  // summation order.
  auto model = Model::Load(KjvPath("models/kjv-llama-5m-f32.gguf"));
  ASSERT_TRUE(model.ok());
  const int64_t d = (*model)->config().n_embd, n = 9;
  std::vector<float> residual(n * d), normed(n * d);
  for (int64_t i = 0; i < n * d; ++i) {
    residual[i] = std::sin(0.37f * static_cast<float>(i));
    normed[i] = std::cos(0.11f * static_cast<float>(i)) * 2.0f;
  }
  const std::vector<uint8_t> decode = {1, 0, 1, 1, 0, 0, 1, 1, 0};
  kernels::ThreadPool pool(2);
  // dense_down_min_tokens 0: the decoded tokens' down rows one by one, bit for bit the lone
  // results; the default (2): their masked activations through the whole matrix, the same
  // neurons summed in another order.
  for (int64_t dense_down : {0, 2}) {
    for (ThresholdMethod method : {ThresholdMethod::kCats, ThresholdMethod::kTealDown}) {
      SparsityOptions o = Opts(0.6, *path_, method);
      o.dense_down_min_tokens = dense_down;
      auto plan = MakeSparsePlan(**model, o, &pool);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      auto batch = MakeFeedForward(**model, *plan, &pool);
      auto alone = MakeFeedForward(**model, *plan, nullptr);
      std::vector<float> want(n * d), got(n * d);
      ASSERT_TRUE(
          batch->Compute(3, {residual.data(), normed.data(), decode.data(), n}, want.data()).ok());
      for (int64_t t = 0; t < n; ++t)
        ASSERT_TRUE(
            alone->Compute(3, {&residual[t * d], &normed[t * d], &decode[t], 1}, &got[t * d]).ok());
      if (dense_down == 0) {
        EXPECT_EQ(got, want) << std::string(batch->mode());
      } else {
        float max_ref = 0, max_diff = 0;
        for (int64_t i = 0; i < n * d; ++i) {
          max_ref = std::max(max_ref, std::fabs(want[i]));
          max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
        }
        EXPECT_LT(max_diff, 1e-4f * max_ref) << std::string(batch->mode());
        EXPECT_NE(got, want);  // the GEMM's order
      }
      EXPECT_EQ(batch->counters().decode_tokens, 5);
      EXPECT_EQ(batch->counters().neurons_computed, alone->counters().neurons_computed);
    }
  }
}

// The trained SwiGLU model converted hot-first and run under CATS with its FFN on flash
// (--cache-mb at several sizes, none and all of it included): every step's logits are bit for bit
// those of the converted file in memory, and the greedy tokens those of the unconverted model at
// the same sparsity (whose neurons are summed in another order). The counters see the hot
// segment take most lookups as it grows.
TEST_F(ProfileTest, ConvertedModelFromFlashComputesTheSame) {
  ConvertOptions co;
  co.profile = *path_;
  const ConvertedPair pair = ConvertKjvQ8(co, "kjv-q8-flash.gguf", "And the LORD spake unto Moses");
  ASSERT_TRUE(pair.src && pair.conv);
  const std::vector<int32_t>& prompt = pair.prompt;
  kernels::ThreadPool pool(2);
  // Greedy decoding of 24 tokens: the tokens and every step's logits.
  auto greedy = [&](const Model& m, std::optional<size_t> cache_bytes, std::vector<float>* all) {
    SparsityOptions o = Opts(0.5, *path_, ThresholdMethod::kCats);
    o.cache_bytes = cache_bytes;
    auto plan = MakeSparsePlan(m, o, &pool);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    ForwardPass fp(m, &pool, MakeFeedForward(m, *plan, &pool));
    const std::vector<int32_t> out = DecodeGreedy(fp, m, prompt, 24, all);
    if (plan.ok() && (*plan)->store) {
      const NeuronStoreStats st = (*plan)->store->stats();
      std::printf("[flash] cache %zu bytes: %lld hot, %lld hits, %lld misses, %llu bytes read\n",
                  *cache_bytes, static_cast<long long>(st.hot_hits),
                  static_cast<long long>(st.cache.hits), static_cast<long long>(st.cache.misses),
                  static_cast<unsigned long long>(st.reads.bytes));
      EXPECT_EQ(st.cache.pinned, 0);
      EXPECT_GT(st.layer_reads, 0);  // the prompt ran dense, each layer read whole
    }
    return out;
  };
  std::vector<float> unconverted_logits, in_memory;
  const std::vector<int32_t> want = greedy(*pair.src, std::nullopt, &unconverted_logits);
  EXPECT_EQ(greedy(*pair.conv, std::nullopt, &in_memory), want);
  const auto bundle_bytes = static_cast<double>(pair.conv->weights().bundles->bundle_bytes());
  for (double share : {0.0, 0.1, 0.4, 1.0}) {
    SCOPED_TRACE("cache share " + std::to_string(share));
    std::vector<float> from_flash;
    EXPECT_EQ(greedy(*pair.conv, static_cast<size_t>(share * bundle_bytes), &from_flash), want);
    EXPECT_EQ(from_flash, in_memory);
  }
}

// --cache-mb without --sparsity on the trained SwiGLU model: every neuron comes through the neuron
// cache (a quarter of the bundles), and the greedy tokens are those of the dense model in memory.
// The logits are close, not equal: the dense FFN rounds the gated activations to Q8_0 blocks for
// the down matrix's quantized dot products, the sparse one scales the down rows it read in f32.
TEST_F(ProfileTest, ConvertedModelFromFlashWithoutSparsityIsTheDenseModel) {
  const ConvertedPair pair =
      ConvertKjvQ8(ConvertOptions{}, "kjv-q8-flash-dense.gguf", "And God said, Let there be light");
  ASSERT_TRUE(pair.src && pair.conv);
  const std::vector<int32_t>& prompt = pair.prompt;
  kernels::ThreadPool pool(2);
  auto greedy = [&](const Model& m, std::optional<size_t> cache_bytes, std::vector<float>* all) {
    SparsityOptions o;
    o.cache_bytes = cache_bytes;
    auto plan = MakeSparsePlan(m, o, &pool);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(cache_bytes.has_value(), plan.ok() && *plan && (*plan)->store != nullptr);
    ForwardPass fp(m, &pool, MakeFeedForward(m, plan.ok() ? *plan : nullptr, &pool));
    const std::vector<int32_t> out = DecodeGreedy(fp, m, prompt, 16, all);
    if (plan.ok() && *plan && (*plan)->store) {
      const NeuronStoreStats st = (*plan)->store->stats();
      EXPECT_GT(st.reads.bytes, 0u) << "the rows came from flash";
      EXPECT_EQ(st.cache.pinned, 0);
    }
    return out;
  };
  std::vector<float> dense, from_flash;
  const std::vector<int32_t> want = greedy(*pair.src, std::nullopt, &dense);
  const auto quarter = pair.conv->weights().bundles->bundle_bytes() / 4;
  EXPECT_EQ(greedy(*pair.conv, static_cast<size_t>(quarter), &from_flash), want);
  ASSERT_EQ(from_flash.size(), dense.size());
  float max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < dense.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(dense[i]));
    max_diff = std::max(max_diff, std::fabs(from_flash[i] - dense[i]));
  }
  EXPECT_LT(max_diff, 2e-2f * max_ref);
  EXPECT_GT(max_ref, 1.0f);
}

// A profile with a trained predictor: written and read back, and run as --sparsity-method
// predictor (gate rows skipped too), decoded tokens computing the share it predicts.
TEST_F(ProfileTest, TrainedPredictorRoundTripsAndRuns) {
  ProfileOptions o;
  o.model = KjvPath("models/kjv-llama-5m-f32.gguf");
  o.text_file = KjvPath("text/kjv-train.txt");
  o.max_tokens = 4 * 256;
  o.threads = 2;
  o.train_predictor = true;
  o.predictor_rank = 32;
  o.predictor_samples = 1024;
  o.predictor_epochs = 2;
  auto p = CalibrateProfile(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->predictors.size(), 6u);
  EXPECT_FLOAT_EQ(p->predictor_level, 0.5f);
  for (const auto& lp : p->predictors) {
    EXPECT_EQ(lp.rank, 32);
    EXPECT_NEAR(lp.recall, 0.9, 0.05);  // the bias is shifted to the asked recall
  }
  const std::string path = testing::TempPath("pred.profile");
  ASSERT_TRUE(WriteActivationProfile(*p, path).ok());
  auto read = ReadActivationProfile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->predictors.size(), 6u);
  EXPECT_EQ(read->predictors[3].fc2, p->predictors[3].fc2);
  EXPECT_EQ(read->predictors[3].bias, p->predictors[3].bias);
  EXPECT_FLOAT_EQ(read->predictors[3].recall, p->predictors[3].recall);
  EXPECT_NE(DescribeProfile(*read).find("recall"), std::string::npos);

  auto model = Model::Load(o.model);
  ASSERT_TRUE(model.ok());
  auto plan = MakeSparsePlan(**model, Opts(0.5, path, ThresholdMethod::kPredictor), nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ForwardPass fp(**model, nullptr, MakeFeedForward(**model, *plan, nullptr));
  EXPECT_EQ(fp.ffn().mode(), "predictor");
  ContiguousKvCache cache(6, 64, (*model)->config().kv_dim());
  std::vector<float> logits;
  for (int32_t t = 0; t < 16; ++t) {
    const int32_t id = 5 + t * 11;
    ASSERT_TRUE(fp.Run({&id, 1}, t, cache, false, &logits).ok());
  }
  const FfnCounters c = fp.ffn().counters();
  EXPECT_GT(c.neurons_computed, 0);
  EXPECT_LT(c.neurons_computed, c.neurons_total);

  // The same profile on the model converted to neuron bundles in reverse order: its predictor's
  // rows follow the records, so the same neurons run and the logits agree.
  ConvertOptions co;
  co.model = o.model;
  co.output = testing::TempPath("kjv-reversed.gguf");
  co.order = [](int64_t, int64_t n_ff) {
    std::vector<int32_t> order(n_ff);
    for (int64_t i = 0; i < n_ff; ++i) order[i] = static_cast<int32_t>(n_ff - 1 - i);
    return order;
  };
  ASSERT_TRUE(ConvertToBundles(co).ok());
  auto converted = Model::Load(co.output);
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  auto cplan = MakeSparsePlan(**converted, Opts(0.5, path, ThresholdMethod::kPredictor), nullptr);
  ASSERT_TRUE(cplan.ok()) << cplan.status().ToString();
  ForwardPass cfp(**converted, nullptr, MakeFeedForward(**converted, *cplan, nullptr));
  ContiguousKvCache ccache(6, 64, (*converted)->config().kv_dim());
  std::vector<float> clogits;
  for (int32_t t = 0; t < 16; ++t) {
    const int32_t id = 5 + t * 11;
    ASSERT_TRUE(cfp.Run({&id, 1}, t, ccache, false, &clogits).ok());
  }
  EXPECT_EQ(cfp.ffn().counters().neurons_computed, c.neurons_computed);
  float max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(logits[i]));
    max_diff = std::max(max_diff, std::fabs(clogits[i] - logits[i]));
  }
  EXPECT_LT(max_diff, 1e-4f * max_ref);
  // A profile without a predictor cannot run the predictor policy.
  auto none = MakeSparsePlan(**model, Opts(0.5, *path_, ThresholdMethod::kPredictor), nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--train-predictor"), std::string::npos);
  std::remove(path.c_str());
}

TEST_F(ProfileTest, PlansRefuseWhatCannotWork) {
  auto model = Model::Load(KjvPath("models/kjv-llama-5m-f32.gguf"));
  ASSERT_TRUE(model.ok());
  auto expect_error = [&](const Model& m, SparsityOptions o, const std::string& needle) {
    auto plan = MakeSparsePlan(m, o, nullptr);
    ASSERT_FALSE(plan.ok()) << needle;
    EXPECT_NE(plan.status().message().find(needle), std::string::npos) << plan.status().ToString();
  };
  expect_error(**model, Opts(0.5, "", ThresholdMethod::kCats), "sparrow profile");
  expect_error(**model, Opts(0.5, "/nonexistent.profile", ThresholdMethod::kCats), "/nonexistent");
  expect_error(**model, Opts(0.99, *path_, ThresholdMethod::kCats), "outside the profile");
  expect_error(**model, Opts(1.5, *path_, ThresholdMethod::kCats), "--sparsity");
  // A profile of another model.
  auto stories = Model::Load(testing::ModelPath("stories260K.gguf"));
  if (stories.ok()) expect_error(**stories, Opts(0.5, *path_, ThresholdMethod::kCats), "layers of");
  // PowerInfer files bring their own predictors.
  auto pwri = Model::Load(KjvPath("models/kjv-relu-5m-pwri-f16.gguf"));
  if (pwri.ok()) expect_error(**pwri, Opts(0.5, *path_, ThresholdMethod::kCats), "predictors");
  // Sparsity 0 is dense, with or without a profile.
  auto dense = MakeSparsePlan(**model, Opts(0, "", ThresholdMethod::kCats), nullptr);
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(*dense, nullptr);
}

TEST_F(ProfileTest, MalformedProfilesNameTheField) {
  ActivationProfile bad = *profile_;
  bad.cats_threshold[0] = std::nanf("");
  const std::string path = testing::TempPath("bad.profile");
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  auto r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cats.threshold"), std::string::npos)
      << r.status().ToString();

  bad = *profile_;
  std::swap(bad.teal_threshold[0], bad.teal_threshold[10 * bad.n_layer]);  // not rising
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layer 0"), std::string::npos) << r.status().ToString();

  bad = *profile_;
  bad.frequency[5] = 1.5f;
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cats.frequency"), std::string::npos);

  bad = *profile_;
  std::swap(bad.miss_fraction[2], bad.miss_fraction[3]);  // not ascending
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("miss.fraction"), std::string::npos);
  bad = *profile_;
  bad.miss_rate[1] = 2.0f;
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("miss.rate"), std::string::npos);
  bad = *profile_;
  bad.miss_rate_hot_half[4] = -0.5f;
  ASSERT_TRUE(WriteActivationProfile(bad, path).ok());
  r = ReadActivationProfile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("miss.rate_hot_half"), std::string::npos);

  // Not a profile at all: a model file.
  r = ReadActivationProfile(KjvPath("models/kjv-llama-5m-q4_0.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sparrow.profile.version"), std::string::npos)
      << r.status().ToString();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sparrow::tools
