// Embedding requests through the scheduler on a real model (stories260K): the pooled, normalised
// hidden state equals the forward pass run whole and pooled by hand, chunked prompts included;
// embeddings batched beside a generation change neither; the prefix cache is reused only where
// it may be (last pooling) and stays right for the generations after; the bounds hold.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/ffn_factory.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::CollectingSink;

constexpr int64_t kCtx = 96;

class EmbeddingRequestTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
    auto t = LoadTokenizer(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value().release();
    SchedulerOptions o;
    o.n_ctx = kCtx;
    o.step_token_budget = 16;  // a 60-token prompt lands in four chunks
    o.is_eog = [](int32_t id) { return tok_->IsEog(id); };
    sched_ = new Scheduler(*model_, nullptr, o);
  }
  static void TearDownTestSuite() {
    delete sched_;
    delete tok_;
    delete model_;
  }

  static std::vector<int32_t> Prompt(int64_t n, int32_t first = 100) {
    std::vector<int32_t> p{1};
    for (int64_t i = 1; i < n; ++i) p.push_back(first + static_cast<int32_t>(i % 200));
    return p;
  }

  static GenerationRequest Embed(std::vector<int32_t> prompt, PoolingType pooling,
                                 std::shared_ptr<CollectingSink> sink) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.embedding = pooling;
    r.sink = std::move(sink);
    return r;
  }

  // Submits and waits; the vector and how the request ended.
  static std::vector<float> Run(std::vector<int32_t> prompt, PoolingType pooling,
                                FinishInfo* info = nullptr) {
    auto sink = std::make_shared<CollectingSink>();
    Status st = sched_->Submit(Embed(std::move(prompt), pooling, sink));
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return {};
    if (info != nullptr) *info = sink->WaitInfo();
    return sink->WaitEmbedding();
  }

  // The prompt's final normed hidden states in one forward pass, pooled and normalised here.
  static std::vector<double> Reference(const std::vector<int32_t>& prompt, PoolingType pooling) {
    const ModelConfig& c = model_->config();
    ForwardPass fp(*model_, nullptr, MakeDefaultFeedForward(*model_, nullptr));
    ContiguousKvCache cache(c.n_layer, kCtx, c.kv_dim());
    ForwardPass::Segment seg{&cache, prompt, 0, /*all_logits=*/true, /*hidden=*/true};
    std::vector<float> logits, hidden;
    Status st = fp.RunBatch({&seg, 1}, &logits, nullptr, &hidden);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(logits.empty());
    const int64_t n = static_cast<int64_t>(prompt.size()), d = c.n_embd;
    EXPECT_EQ(static_cast<int64_t>(hidden.size()), n * d);
    std::vector<double> v(d, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const bool take = pooling == PoolingType::kMean || (pooling == PoolingType::kCls && t == 0) ||
                        (pooling == PoolingType::kLast && t == n - 1);
      for (int64_t i = 0; take && i < d; ++i) v[i] += hidden[t * d + i];
    }
    double norm = 0;
    for (double x : v) norm += x * x;
    for (double& x : v) x /= std::sqrt(norm);
    return v;
  }

  static void ExpectNear(const std::vector<float>& got, const std::vector<double>& want,
                         double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "component " << i;
  }

  static Model* model_;
  static Tokenizer* tok_;
  static Scheduler* sched_;
};

Model* EmbeddingRequestTest::model_ = nullptr;
Tokenizer* EmbeddingRequestTest::tok_ = nullptr;
Scheduler* EmbeddingRequestTest::sched_ = nullptr;

TEST_F(EmbeddingRequestTest, EveryPoolingEqualsTheWholePassPooledByHand) {
  const std::vector<int32_t> prompt = Prompt(60, 200);  // four chunks of the step budget
  for (PoolingType p : {PoolingType::kMean, PoolingType::kCls, PoolingType::kLast}) {
    SCOPED_TRACE(PoolingName(p));
    FinishInfo info;
    const std::vector<float> got = Run(prompt, p, &info);
    ExpectNear(got, Reference(prompt, p), 1e-5);
    EXPECT_EQ(info.reason, FinishReason::kStop);
    EXPECT_EQ(info.prompt_tokens, 60);
    EXPECT_EQ(info.completion_tokens, 0);
  }
  // kNone: one unit row per token, the last of which is the last pooling's.
  const std::vector<float> rows = Run(prompt, PoolingType::kNone);
  const int64_t d = model_->config().n_embd;
  ASSERT_EQ(static_cast<int64_t>(rows.size()), 60 * d);
  const std::vector<float> last(rows.end() - d, rows.end());
  ExpectNear(last, Reference(prompt, PoolingType::kLast), 1e-5);
}

TEST_F(EmbeddingRequestTest, BatchedBesideAGenerationNeitherChanges) {
  auto generate = [](std::shared_ptr<CollectingSink> sink) {
    GenerationRequest r;
    r.prompt = tok_->Tokenize("Once upon a time", true);
    r.sampling.temperature = 0;
    r.max_tokens = 24;
    r.sink = std::move(sink);
    return r;
  };
  auto alone = std::make_shared<CollectingSink>();
  ASSERT_TRUE(sched_->Submit(generate(alone)).ok());
  const std::vector<int32_t> want = alone->Wait();

  auto gen = std::make_shared<CollectingSink>();
  ASSERT_TRUE(sched_->Submit(generate(gen)).ok());
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(Prompt(20 + 9 * i, 40 + 30 * i));
    sinks.push_back(std::make_shared<CollectingSink>());
    ASSERT_TRUE(sched_->Submit(Embed(prompts.back(), PoolingType::kMean, sinks.back())).ok());
  }
  EXPECT_EQ(gen->Wait(), want);
  for (int i = 0; i < 4; ++i) {
    ExpectNear(sinks[i]->WaitEmbedding(), Reference(prompts[i], PoolingType::kMean), 1e-5);
  }
}

TEST_F(EmbeddingRequestTest, PrefixCacheReusedOnlyWhereItMayBe) {
  const std::vector<int32_t> prompt = Prompt(70, 300);
  // An embedding publishes its full blocks: a generation of the same prompt starts from them
  // and says what a generation with no cache says.
  FinishInfo info;
  Run(prompt, PoolingType::kMean, &info);
  EXPECT_EQ(info.cached_prompt_tokens, 0);
  auto generate = [&](std::vector<int32_t> p, FinishInfo* out) {
    auto sink = std::make_shared<CollectingSink>();
    GenerationRequest r;
    r.prompt = std::move(p);
    r.sampling.temperature = 0;
    r.max_tokens = 8;
    r.sink = sink;
    EXPECT_TRUE(sched_->Submit(std::move(r)).ok());
    *out = sink->WaitInfo();
    return sink->Wait();
  };
  FinishInfo cached_gen;
  const std::vector<int32_t> after = generate(prompt, &cached_gen);
  EXPECT_GE(cached_gen.cached_prompt_tokens, 48);
  std::vector<int32_t> fresh_prompt = prompt;
  fresh_prompt[1] = 7;  // a different first block: nothing cached
  FinishInfo fresh_info;
  generate(fresh_prompt, &fresh_info);
  EXPECT_EQ(fresh_info.cached_prompt_tokens, 0);
  EXPECT_EQ(after.size(), 8u);

  // Mean and cls need every row: they compute the cached prompt again; last reuses it.
  for (PoolingType p : {PoolingType::kMean, PoolingType::kCls, PoolingType::kLast}) {
    SCOPED_TRACE(PoolingName(p));
    FinishInfo again;
    ExpectNear(Run(prompt, p, &again), Reference(prompt, p), 1e-5);
    if (p == PoolingType::kLast) {
      EXPECT_GE(again.cached_prompt_tokens, 48);
    } else {
      EXPECT_EQ(again.cached_prompt_tokens, 0);
    }
  }
}

TEST_F(EmbeddingRequestTest, BoundsHold) {
  // The whole context for the prompt (a generation needs one position more).
  FinishInfo info;
  EXPECT_EQ(Run(Prompt(kCtx), PoolingType::kLast, &info).size(),
            static_cast<size_t>(model_->config().n_embd));
  auto sink = std::make_shared<CollectingSink>();
  Status over = sched_->Submit(Embed(Prompt(kCtx + 1), PoolingType::kLast, sink));
  EXPECT_EQ(over.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.message().find(std::to_string(kCtx)), std::string::npos) << over.message();
  GenerationRequest gen;
  gen.prompt = Prompt(kCtx);
  gen.sink = sink;
  EXPECT_EQ(sched_->Submit(std::move(gen)).code(), StatusCode::kInvalidArgument);
  std::vector<GenerationRequest> group;
  group.push_back(Embed(Prompt(8), PoolingType::kMean, sink));
  group.push_back(Embed(Prompt(8), PoolingType::kMean, sink));
  EXPECT_EQ(sched_->SubmitGroup(std::move(group)).code(), StatusCode::kInvalidArgument);
  // Every vector has unit length.
  const std::vector<float> v = Run(Prompt(5), PoolingType::kMean);
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

}  // namespace
}  // namespace sparrow
