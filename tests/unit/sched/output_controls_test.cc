// A request's logit_bias and forced_tokens on a real model (stories260K): forced tokens come
// out as given (then sampling resumes), a +100 bias makes greedy decoding pick that token, a
// -100 bias bans it, and the logprobs stay the model's own.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::CollectingSink;

class OutputControlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::Load(testing::ModelPath("stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    auto t = LoadTokenizer(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value();
    SchedulerOptions o;
    o.n_ctx = 128;
    o.is_eog = [this](int32_t id) { return tok_->IsEog(id); };
    sched_ = std::make_unique<Scheduler>(*model_, &pool_, o);
  }

  GenerationRequest Greedy(int64_t max_tokens, std::shared_ptr<CollectingSink> sink) {
    GenerationRequest r;
    r.prompt = tok_->Tokenize("Once upon a time", true);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.logprobs = true;
    r.sink = std::move(sink);
    return r;
  }

  std::vector<int32_t> Run(GenerationRequest r) {
    auto sink = std::static_pointer_cast<CollectingSink>(r.sink);
    EXPECT_TRUE(sched_->Submit(std::move(r)).ok());
    return sink->Wait();
  }

  kernels::ThreadPool pool_{1};
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(OutputControlsTest, ForcedTokensComeFirstThenSamplingResumes) {
  GenerationRequest r = Greedy(6, std::make_shared<CollectingSink>());
  r.forced_tokens = {300, 301};
  auto sink = std::static_pointer_cast<CollectingSink>(r.sink);
  ASSERT_TRUE(sched_->Submit(std::move(r)).ok());
  const std::vector<TokenEvent> events = sink->WaitEvents();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].token, 300);
  EXPECT_EQ(events[1].token, 301);
  // The model's own view of the forced tokens.
  EXPECT_TRUE(std::isfinite(events[0].logprob));
  EXPECT_LE(events[0].logprob, 0.0f);
}

TEST_F(OutputControlsTest, BiasForcesAndBans) {
  const std::vector<int32_t> plain = Run(Greedy(4, std::make_shared<CollectingSink>()));
  GenerationRequest up = Greedy(4, std::make_shared<CollectingSink>());
  up.logit_bias = {{300, 100.0f}};
  EXPECT_EQ(Run(std::move(up)), std::vector<int32_t>(4, 300));
  GenerationRequest ban = Greedy(1, std::make_shared<CollectingSink>());
  ban.logit_bias = {{plain[0], -100.0f}};
  const std::vector<int32_t> banned = Run(std::move(ban));
  ASSERT_EQ(banned.size(), 1u);
  EXPECT_NE(banned[0], plain[0]);
}

TEST_F(OutputControlsTest, IdsOutsideTheVocabularyAreRefused) {
  GenerationRequest r = Greedy(4, std::make_shared<CollectingSink>());
  r.logit_bias = {{tok_->n_vocab(), 1.0f}};
  EXPECT_FALSE(sched_->Submit(std::move(r)).ok());
  GenerationRequest f = Greedy(4, std::make_shared<CollectingSink>());
  f.forced_tokens = {-1};
  EXPECT_FALSE(sched_->Submit(std::move(f)).ok());
}

}  // namespace
}  // namespace sparrow
