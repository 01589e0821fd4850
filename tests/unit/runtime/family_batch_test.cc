// The newer families' layers (sliding windows, QK-norm, post-norms, experts) give the same logits
// whichever way a sequence is cut into steps and whichever sequences share a batch: a prompt in
// one batch against a chunk then single tokens on two threads, and three sequences in one batch
// against each alone. The files are ../shared/arch's; their match with llama.cpp is the golden
// test's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/sparse/ffn_factory.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

double RelDiff(const float* got, const float* want, int64_t n) {
  double max_ref = 0, max_d = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
    max_d = std::max(max_d, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  return max_d / std::max(max_ref, 1e-9);
}

class FamilyBatchTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string path = testing::SharedDir() + "/arch/models/" + GetParam() + ".gguf";
    auto m = Model::Load(path);
    if (!m.ok() && m.status().code() == StatusCode::kNotFound) GTEST_SKIP() << path << " absent";
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    // 20 tokens: past gemma3's window of 8, so local layers drop keys while the batch runs.
    for (int i = 0; i < 20; ++i)
      tokens_.push_back(static_cast<int32_t>((i * 37 + 5) % model_->config().n_vocab));
  }
  std::unique_ptr<Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_P(FamilyBatchTest, BatchEqualsChunksThenSingleTokens) {
  const ModelConfig& c = model_->config();
  const int64_t v = c.n_vocab;
  ForwardPass one(*model_, nullptr, MakeDefaultFeedForward(*model_, nullptr));
  ContiguousKvCache c1(c.n_layer, 32, c.kv_dim());
  std::vector<float> batch;
  ASSERT_TRUE(one.Run(tokens_, 0, c1, true, &batch).ok());

  kernels::ThreadPool pool(2);
  ForwardPass two(*model_, &pool, MakeDefaultFeedForward(*model_, &pool));
  ContiguousKvCache c2(c.n_layer, 32, c.kv_dim());
  std::vector<float> step;
  ASSERT_TRUE(two.Run({tokens_.data(), 5}, 0, c2, true, &step).ok());
  for (size_t t = 5; t < tokens_.size(); ++t) {
    ASSERT_TRUE(two.Run({&tokens_[t], 1}, static_cast<int64_t>(t), c2, false, &step).ok());
    EXPECT_LE(RelDiff(step.data(), &batch[t * v], v), 1e-5) << "position " << t;
  }
}

TEST_P(FamilyBatchTest, BatchOfSequencesEqualsEachAlone) {
  const ModelConfig& c = model_->config();
  const int64_t v = c.n_vocab;
  kernels::ThreadPool pool(2);
  ForwardPass fp(*model_, &pool, MakeDefaultFeedForward(*model_, &pool));
  std::vector<ContiguousKvCache> caches;
  for (int i = 0; i < 3; ++i) caches.emplace_back(c.n_layer, 32, c.kv_dim());
  std::vector<float> scratch;
  ASSERT_TRUE(fp.Run({tokens_.data(), 3}, 0, caches[1], false, &scratch).ok());
  ASSERT_TRUE(fp.Run({tokens_.data() + 2, 12}, 0, caches[2], false, &scratch).ok());
  const std::vector<ForwardPass::Segment> segs = {
      {&caches[0], {tokens_.data(), 9}, 0, true},
      {&caches[1], {tokens_.data() + 3, 1}, 3, false},
      {&caches[2], {tokens_.data() + 14, 1}, 12, false},
  };
  std::vector<float> batched;
  ASSERT_TRUE(fp.RunBatch(segs, &batched).ok());
  ASSERT_EQ(batched.size(), static_cast<size_t>(11 * v));

  std::vector<float> want, step;
  ContiguousKvCache a(c.n_layer, 32, c.kv_dim()), b(c.n_layer, 32, c.kv_dim()),
      d(c.n_layer, 32, c.kv_dim());
  ASSERT_TRUE(fp.Run({tokens_.data(), 9}, 0, a, true, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  ASSERT_TRUE(fp.Run({tokens_.data(), 4}, 0, b, false, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  std::vector<int32_t> third(tokens_.begin() + 2, tokens_.begin() + 14);
  third.push_back(tokens_[14]);
  ASSERT_TRUE(fp.Run(third, 0, d, false, &step).ok());
  want.insert(want.end(), step.begin(), step.end());
  for (int64_t r = 0; r < 11; ++r)
    EXPECT_LE(RelDiff(&batched[r * v], &want[r * v], v), 1e-5) << "row " << r;
}

INSTANTIATE_TEST_SUITE_P(Arch, FamilyBatchTest,
                         ::testing::Values("synth-llama3rope-f32", "synth-qwen3-f32",
                                           "synth-qwen3moe-f32", "synth-gemma3-f32"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.substr(6, i.param.size() - 10);
                           return n;
                         });

}  // namespace
}  // namespace sparrow
