// The memory plan's sparsity level applied while serving (issue 15), on the trained KJV model
// (real activations) with a profile calibrated from its training text: the levels a server may
// switch to, a switch taking effect between two forward passes and never inside one, the share
// of neurons computed following the level, and greedy output after a switch equal to a server
// started at that level.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/sparse_ffn.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tools/profile_command.h"
#include "tests/util/collecting_sink.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::CollectingSink;

std::string KjvModel() {
  return testing::SharedDir() + "/kjv/models/kjv-llama-5m-f32.gguf";
}

MemoryPlan SparsityPlan(int64_t version, std::optional<double> sparsity) {
  MemoryPlan p;
  p.version = version;
  p.sparsity = sparsity;
  p.cause = "test";
  p.decided = std::chrono::steady_clock::now();
  return p;
}

// Share of neurons computed per decoded token between two readings of the counters.
double ActiveShare(const FfnCounters& before, const FfnCounters& after) {
  const int64_t total = after.neurons_total - before.neurons_total;
  EXPECT_GT(total, 0);
  return static_cast<double>(after.neurons_computed - before.neurons_computed) /
         static_cast<double>(total);
}

// One profile for the suite: calibrating takes a few seconds.
class SparsitySwitchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::FileExists(KjvModel())) return;
    tools::ProfileOptions o;
    o.model = KjvModel();
    o.text_file = testing::SharedDir() + "/kjv/text/kjv-train.txt";
    o.max_tokens = 4 * 256;
    o.threads = 2;
    auto p = tools::CalibrateProfile(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    path_ = new std::string(testing::TempPath("kjv-switch.profile"));
    ASSERT_TRUE(tools::WriteActivationProfile(*p, *path_).ok());
  }
  static void TearDownTestSuite() {
    if (path_) std::remove(path_->c_str());
    delete path_;
    path_ = nullptr;
  }
  void SetUp() override {
    if (!path_) GTEST_SKIP() << KjvModel() << " is missing";
    auto m = Model::Load(KjvModel());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    auto t = LoadTokenizer(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value();
  }

  std::shared_ptr<const SparsePlan> Plan(double sparsity) {
    SparsityOptions o;
    o.sparsity = sparsity;
    o.profile_path = *path_;
    auto plan = MakeSparsePlan(*model_, o, &pool_);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? *plan : nullptr;
  }

  // A scheduler running `plan` (null: dense), its level switchable as sparrowd's is.
  std::unique_ptr<Scheduler> Start(std::shared_ptr<const SparsePlan> plan) {
    SchedulerOptions o;
    o.n_ctx = 256;
    o.is_eog = [this](int32_t id) { return tok_->IsEog(id); };
    o.make_ffn = [plan](const Model& model, kernels::ThreadPool* tp) {
      return MakeFeedForward(model, plan, tp);
    };
    return std::make_unique<Scheduler>(*model_, &pool_, o);
  }

  // One request at a time: the scheduler is idle between two.
  std::vector<int32_t> Greedy(Scheduler& s, const std::string& text, int64_t max_tokens = 32) {
    const int64_t generated = s.Stats().generated_tokens;
    auto sink = std::make_shared<CollectingSink>();
    GenerationRequest r;
    r.prompt = tok_->Tokenize(text, true);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.sink = sink;
    EXPECT_TRUE(s.Submit(std::move(r)).ok());
    std::vector<int32_t> tokens = sink->Wait();
    // The sink hears the end inside the last step; its counters join Stats() after it.
    const int64_t want = generated + static_cast<int64_t>(tokens.size());
    while (s.Stats().generated_tokens < want) std::this_thread::yield();
    return tokens;
  }

  // Hands `plan` to the scheduler and waits until it is applied (idle: at once).
  static void Apply(Scheduler& s, MemoryPlan plan) {
    const int64_t version = plan.version;
    s.ApplyMemoryPlan(std::move(plan));
    while (s.Stats().memory_plan_version < version) std::this_thread::yield();
  }

  static std::string* path_;
  kernels::ThreadPool pool_{2};
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
};
std::string* SparsitySwitchTest::path_ = nullptr;

const char* const kPrompt = "And the LORD spake unto Moses, saying,";
const char* const kOther = "Blessed are the";

TEST_F(SparsitySwitchTest, LevelsAreDenseAndTheProfilesUpToTheStart) {
  auto plan = Plan(0.5);
  ASSERT_NE(plan, nullptr);
  ASSERT_NE(plan->levels, nullptr);
  const std::vector<ThresholdLevel>& levels = plan->levels->levels();
  ASSERT_EQ(levels.size(), 11u);  // dense, 0.05 .. 0.45, and 0.5
  EXPECT_TRUE(levels.front().dense());
  EXPECT_EQ(levels.back().sparsity, 0.5);
  EXPECT_EQ(plan->levels->Current().sparsity, 0.5);
  // Each level's thresholds are those of a plan started there.
  auto at30 = Plan(0.3);
  ASSERT_NE(at30, nullptr);
  EXPECT_EQ(levels[6].sparsity, 0.3);
  EXPECT_EQ(levels[6].thresholds, at30->levels->Current().thresholds);
  // The lowest and highest profile levels are reachable by their decimal names (floats in the
  // profile: 0.05f is above 0.05).
  EXPECT_NE(Plan(0.05), nullptr);
  EXPECT_NE(Plan(0.95), nullptr);

  // Another level than the allowed ones: the nearest, never above the start.
  SparsityLevel& level = *plan->levels;
  EXPECT_EQ(level.Set(0.9), 0.5);
  EXPECT_EQ(level.Set(0.31), 0.3);
  EXPECT_EQ(level.Set(0.025), 0);  // a tie (between dense and 0.05) goes to the lower level
  EXPECT_EQ(level.Set(-1), 0);
  EXPECT_EQ(level.Set(0.5), 0.5);

  // A start between two profile levels is a level of its own.
  auto between = Plan(0.33);
  ASSERT_NE(between, nullptr);
  EXPECT_EQ(between->levels->levels().back().sparsity, 0.33);
  EXPECT_EQ(between->levels->levels()[between->levels->levels().size() - 2].sparsity, 0.3);
}

// A SparseFfn reads the level at the first layer of a pass: a switch in the middle of one waits
// for the next.
TEST_F(SparsitySwitchTest, ASwitchWaitsForTheNextForwardPass) {
  auto plan = Plan(0.5);
  ASSERT_NE(plan, nullptr);
  const ModelConfig& c = model_->config();
  SparseFfn ffn(*model_, plan, nullptr);
  std::vector<float> residual(c.n_embd), normed(c.n_embd), out(c.n_embd);
  for (int64_t i = 0; i < c.n_embd; ++i) normed[i] = residual[i] = std::sin(0.37f * i);
  const uint8_t decode = 1;
  const FfnInput in{residual.data(), normed.data(), &decode, 1};
  auto computed = [&](int64_t il) {
    const int64_t before = ffn.counters().neurons_computed;
    EXPECT_TRUE(ffn.Compute(il, in, out.data()).ok());
    return ffn.counters().neurons_computed - before;
  };
  EXPECT_LT(computed(0), c.n_ff);
  plan->levels->Set(0);
  EXPECT_LT(computed(1), c.n_ff) << "the pass started at 0.5";
  EXPECT_EQ(computed(0), c.n_ff) << "the next pass is dense";
  EXPECT_EQ(computed(1), c.n_ff);
}

TEST_F(SparsitySwitchTest, ALowerLevelComputesMoreNeurons) {
  auto s = Start(Plan(0.5));
  FfnCounters before = s->Stats().ffn;
  Greedy(*s, kPrompt);
  FfnCounters after = s->Stats().ffn;
  const double at50 = ActiveShare(before, after);
  EXPECT_NEAR(at50, 0.5, 0.12);
  EXPECT_EQ(s->Stats().sparsity, 0.5);

  Apply(*s, SparsityPlan(1, 0.25));
  EXPECT_EQ(s->Stats().sparsity, 0.25);
  before = after;
  Greedy(*s, kPrompt);
  after = s->Stats().ffn;
  const double at25 = ActiveShare(before, after);
  EXPECT_NEAR(at25, 0.75, 0.12);
  EXPECT_GT(at25, at50 + 0.15);

  Apply(*s, SparsityPlan(2, 0.0));
  EXPECT_EQ(s->Stats().sparsity, 0.0);
  before = after;
  Greedy(*s, kPrompt);
  EXPECT_EQ(ActiveShare(before, s->Stats().ffn), 1.0);
}

// Thresholds are exact, so a switched server computes what one started at the level computes.
TEST_F(SparsitySwitchTest, OutputAfterASwitchEqualsAServerStartedAtTheLevel) {
  auto s = Start(Plan(0.5));
  Greedy(*s, kOther);  // some steps at the start level first
  const std::vector<int32_t> at50 = Greedy(*s, kPrompt);
  Apply(*s, SparsityPlan(1, 0.25));
  const std::vector<int32_t> switched = Greedy(*s, kPrompt);
  EXPECT_NE(switched, at50) << "the levels differ on this prompt, so the test tells them apart";
  EXPECT_EQ(switched, Greedy(*Start(Plan(0.25)), kPrompt));

  Apply(*s, SparsityPlan(2, 0.0));
  EXPECT_EQ(Greedy(*s, kPrompt), Greedy(*Start(nullptr), kPrompt)) << "dense";

  Apply(*s, SparsityPlan(3, 0.5));  // and back
  EXPECT_EQ(Greedy(*s, kPrompt), Greedy(*Start(Plan(0.5)), kPrompt));
}

TEST_F(SparsitySwitchTest, ALevelAboveTheStartIsClamped) {
  auto s = Start(Plan(0.3));
  const std::vector<int32_t> at30 = Greedy(*s, kPrompt);
  const FfnCounters before = s->Stats().ffn;
  Apply(*s, SparsityPlan(1, 0.7));
  EXPECT_EQ(s->Stats().sparsity, 0.3);
  EXPECT_EQ(Greedy(*s, kPrompt), at30);
  EXPECT_NEAR(ActiveShare(before, s->Stats().ffn), 0.7, 0.12);
}

TEST_F(SparsitySwitchTest, APlanWithoutSparsityKeepsTheLevel) {
  auto s = Start(Plan(0.5));
  Apply(*s, SparsityPlan(1, 0.25));
  const std::vector<int32_t> at25 = Greedy(*s, kPrompt);
  const FfnCounters before = s->Stats().ffn;
  MemoryPlan other = SparsityPlan(2, std::nullopt);
  other.threads = 2;                                       // what the pool has
  other.bytes.Set(MemoryUserKind::kKvPool, SIZE_MAX / 2);  // clamped to the configured pool
  Apply(*s, other);
  EXPECT_EQ(s->Stats().sparsity, 0.25);
  EXPECT_EQ(Greedy(*s, kPrompt), at25);
  EXPECT_NEAR(ActiveShare(before, s->Stats().ffn), 0.75, 0.12);
}

// A dense server and a PowerInfer-style fixed plan have no level to move: plans' sparsity is
// ignored.
TEST_F(SparsitySwitchTest, ADenseServerIgnoresTheLevel) {
  auto s = Start(nullptr);
  const std::vector<int32_t> dense = Greedy(*s, kPrompt);
  Apply(*s, SparsityPlan(1, 0.5));
  EXPECT_FALSE(s->Stats().sparsity.has_value());
  EXPECT_EQ(Greedy(*s, kPrompt), dense);
}

}  // namespace
}  // namespace sparrow
