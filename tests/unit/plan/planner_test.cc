// SolvePlan on inputs whose optimum can be worked out by hand (plan_fixture.h has the arithmetic):
// the choices, the predicted speed, what binds, and the errors of infeasible requests.
#include "engine/plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/plan/plan_fixture.h"

namespace sparrow::plan {
namespace {

using testing::HandInputs;

PlanRequest Request(size_t budget) {
  PlanRequest r;
  r.budget_bytes = budget;
  r.max_threads = 2;
  r.min_kv_bytes = 2000000;  // 2000 positions of 1000 bytes
  return r;
}

bool Binds(const RunPlan& p, const char* name) {
  return std::find(p.binding.begin(), p.binding.end(), name) != p.binding.end();
}

TEST(PlannerTest, RoomyBudgetTakesTheWholeCacheAndBothThreads) {
  auto p = SolvePlan(HandInputs(), Request(20000000));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->threads, 2);
  EXPECT_EQ(p->neuron_cache_bytes, 4096000u);
  EXPECT_EQ(p->kv_pool_bytes, 2000000u);
  EXPECT_DOUBLE_EQ(p->sparsity, 0.5);
  // 0.5 ms dense + max(0.25 ms compute, 0 flash) = 0.75 ms.
  EXPECT_NEAR(p->predicted_ms_per_token, 0.75, 1e-9);
  EXPECT_NEAR(p->predicted_tokens_per_s, 1000 / 0.75, 1e-6);
  EXPECT_EQ(p->memory_bytes, 11000000u + 4096000u + 2000000u);
  EXPECT_TRUE(p->binding.empty()) << p->binding.front();
  EXPECT_EQ(p->objective, "speed");
}

TEST(PlannerTest, TighterBudgetTakesHalfTheCacheAndSaysTheBudgetBinds) {
  auto p = SolvePlan(HandInputs(), Request(16000000));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->threads, 2);
  EXPECT_EQ(p->neuron_cache_bytes, 2048000u);
  // 0.5 ms + max(0.25, 0.4096 + 0.2 * 0.25) ms: the reads are the longer; the rows in memory
  // are computed behind them, the missed fifth after them.
  EXPECT_NEAR(p->predicted_ms_per_token, 0.9596, 1e-9);
  EXPECT_NEAR(p->flash_ms, 0.4096, 1e-9);
  EXPECT_EQ(p->memory_bytes, 15048000u);
  EXPECT_TRUE(Binds(*p, constraint::kBudget));
}

TEST(PlannerTest, OneThreadLimitIsReportedAsBinding) {
  PlanRequest r = Request(20000000);
  r.max_threads = 1;
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->threads, 1);
  EXPECT_NEAR(p->predicted_ms_per_token, 1.5, 1e-9);  // 1 ms + max(0.5, 0)
  EXPECT_TRUE(Binds(*p, constraint::kThreads));
  EXPECT_FALSE(Binds(*p, constraint::kBudget));
}

TEST(PlannerTest, InfeasibleBudgetNamesTheBudgetAndTheSmallestThatWorks) {
  const PlanRequest r = Request(12000000);
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  const std::string& m = p.status().message();
  EXPECT_EQ(m.rfind("budget:", 0), 0u) << m;
  // 11 MB fixed + no cache + 2 MB KV = 13,000,000 bytes = 12.40 MiB.
  EXPECT_NE(m.find("needs 12.40 MiB (--budget-mb 13)"), std::string::npos) << m;
  auto least = MinimumBudget(HandInputs(), r);
  ASSERT_TRUE(least.ok()) << least.status().ToString();
  EXPECT_EQ(*least, 13000000u);
}

TEST(PlannerTest, SpeedFloorThatNeedsMoreMemoryRaisesTheMinimumBudget) {
  PlanRequest r = Request(16000000);
  r.min_tokens_per_s = 1200;  // half the cache gives 1042: only the whole cache (1333) will do
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_FALSE(p.ok());
  const std::string& m = p.status().message();
  EXPECT_EQ(m.rfind("budget:", 0), 0u) << m;
  EXPECT_NE(m.find("tokens/s is what needs it"), std::string::npos) << m;
  auto least = MinimumBudget(HandInputs(), r);
  ASSERT_TRUE(least.ok());
  EXPECT_EQ(*least, 17096000u);
}

TEST(PlannerTest, UnreachableSpeedFloorNamesTheFloorAndTheBestSpeed) {
  PlanRequest r = Request(100000000);
  r.min_tokens_per_s = 2000;
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kOutOfRange);
  const std::string& m = p.status().message();
  EXPECT_EQ(m.rfind("min_tokens_per_s:", 0), 0u) << m;
  EXPECT_NE(m.find("1333.33 tokens/s"), std::string::npos) << m;
}

TEST(PlannerTest, MemoryObjectiveTakesTheLeastMemoryAboveTheFloor) {
  PlanRequest r = Request(20000000);
  r.objective = PlanRequest::Objective::kMemory;
  r.min_tokens_per_s = 1000;  // no cache: 357 tok/s; half: 1042 with two threads, 662 with one
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->objective, "memory");
  EXPECT_EQ(p->neuron_cache_bytes, 2048000u);
  EXPECT_EQ(p->threads, 2);
  EXPECT_EQ(p->memory_bytes, 15048000u);
  EXPECT_TRUE(Binds(*p, constraint::kMinSpeed));
}

TEST(PlannerTest, MemoryObjectiveWithoutFloorTakesNoCache) {
  PlanRequest r = Request(20000000);
  r.objective = PlanRequest::Objective::kMemory;
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->neuron_cache_bytes, 0u);
  EXPECT_EQ(p->memory_bytes, 13000000u);
  EXPECT_EQ(p->threads, 2);  // the tie on memory goes to speed
}

TEST(PlannerTest, MaxSparsityIsTheQualityLimit) {
  PlanInputs in = HandInputs();
  in.levels.push_back({0.8, 0.2, true, 0});  // C = 200 * 1000 B / 2 GB/s = 0.1 ms
  PlanRequest r = Request(20000000);
  auto fast = SolvePlan(in, r);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_DOUBLE_EQ(fast->sparsity, 0.8);
  EXPECT_NEAR(fast->predicted_ms_per_token, 0.6, 1e-9);
  r.max_sparsity = 0.5;
  auto limited = SolvePlan(in, r);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_DOUBLE_EQ(limited->sparsity, 0.5);
  EXPECT_TRUE(Binds(*limited, constraint::kMaxSparsity));
  r.max_sparsity = 0.1;
  auto none = SolvePlan(in, r);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("max_sparsity:", 0), 0u) << none.status().message();
}

TEST(PlannerTest, SpeedTiesGoToTheLargerCacheMemoryTiesToTheSmaller) {
  // Flash at 10 GB/s and one thread: half the cache costs 1 + max(0.5, 0.04096 + 0.2 * 0.5) ms,
  // the whole cache 1 + 0.5 ms: the same 1.5 ms; no cache 1 + 0.2048 + 0.5 = 1.7048 ms.
  PlanInputs in = HandInputs();
  in.hw.flash[0].mib_per_s *= 10;
  PlanRequest r = Request(20000000);
  r.max_threads = 1;
  auto speed = SolvePlan(in, r);
  ASSERT_TRUE(speed.ok()) << speed.status().ToString();
  EXPECT_NEAR(speed->predicted_ms_per_token, 1.5, 1e-9);
  EXPECT_EQ(speed->neuron_cache_bytes, 4096000u);  // reads least from flash
  r.objective = PlanRequest::Objective::kMemory;
  r.min_tokens_per_s = 600;  // 1.7048 ms (587 tok/s) is too slow: half the cache
  auto memory = SolvePlan(in, r);
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->neuron_cache_bytes, 2048000u);
  EXPECT_NEAR(memory->predicted_ms_per_token, 1.5, 1e-9);
}

TEST(PlannerTest, LeftoverBudgetGrowsTheKvPoolUpToItsCeiling) {
  PlanRequest r = Request(17500000);
  r.max_kv_bytes = 3000000;
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->neuron_cache_bytes, 4096000u);  // speed first
  EXPECT_EQ(p->kv_pool_bytes, 17500000u - 11000000u - 4096000u);
  EXPECT_EQ(p->memory_bytes, 17500000u);
}

// No plan takes more than the budget it was made for, at any budget (odd ones included: the
// solver's sizes are whole units, the budget need not be), for either objective.
TEST(PlannerTest, APlanNeverExceedsItsBudget) {
  for (size_t budget = 15000000; budget <= 20000000; budget += 123457) {
    for (PlanRequest::Objective obj :
         {PlanRequest::Objective::kSpeed, PlanRequest::Objective::kMemory}) {
      PlanRequest r = Request(budget);
      r.max_kv_bytes = 3000001;
      r.objective = obj;
      auto p = SolvePlan(HandInputs(), r);
      ASSERT_TRUE(p.ok()) << budget << ": " << p.status().ToString();
      EXPECT_LE(p->memory_bytes, budget);
      EXPECT_LE(11000000u + p->neuron_cache_bytes + p->kv_pool_bytes, budget);
    }
  }
}

TEST(PlannerTest, BadRequestsNameTheField) {
  PlanRequest r = Request(20000000);
  r.max_threads = 0;
  auto p = SolvePlan(HandInputs(), r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("max_threads"), std::string::npos);
  r = Request(20000000);
  r.min_tokens_per_s = -1;
  p = SolvePlan(HandInputs(), r);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("min_tokens_per_s"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::plan
