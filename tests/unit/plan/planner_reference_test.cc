// SolvePlan against a plain reference: every choice enumerated and costed with the cost model
// (llm.c's idea: the fast path and a readable one compared on the same random inputs). The
// planner must find the same least time (or least memory), and call infeasible exactly what the
// enumeration finds no plan for.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "engine/plan/cost_model.h"
#include "engine/plan/planner.h"
#include "tests/unit/plan/plan_fixture.h"

namespace sparrow::plan {
namespace {

struct Reference {
  bool found = false;
  double token_s = std::numeric_limits<double>::infinity();
  uint64_t memory = std::numeric_limits<uint64_t>::max();
  uint64_t least_memory = std::numeric_limits<uint64_t>::max();  // the budget ignored
};

Reference Enumerate(const PlanInputs& in, const PlanRequest& r) {
  Reference best;
  const bool speed = r.objective == PlanRequest::Objective::kSpeed;
  for (int t = 1; t <= std::min(r.max_threads, in.hw.max_threads); ++t) {
    for (const CachePoint& c : in.cache) {
      for (const PlanLevel& l : in.levels) {
        if (l.sparsity > r.max_sparsity + 1e-6) continue;
        const TokenCost cost = Evaluate(in, t, c, l, r.min_kv_bytes);
        if (r.min_tokens_per_s > 0 && cost.token_s > 1 / r.min_tokens_per_s) continue;
        best.least_memory = std::min(best.least_memory, cost.memory_bytes);
        if (cost.memory_bytes > r.budget_bytes) continue;
        best.found = true;
        const bool better =
            speed ? cost.token_s < best.token_s ||
                        (cost.token_s == best.token_s && cost.memory_bytes < best.memory)
                  : cost.memory_bytes < best.memory ||
                        (cost.memory_bytes == best.memory && cost.token_s < best.token_s);
        if (better) best.token_s = cost.token_s, best.memory = cost.memory_bytes;
      }
    }
  }
  return best;
}

PlanInputs RandomInputs(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  PlanInputs in = testing::HandInputs();
  in.hw.max_threads = 1 + static_cast<int>(rng() % 4);
  KernelRate& k = in.hw.kernels[0];
  k.dense_bytes_per_s.clear();
  k.gather_bytes_per_s.clear();
  in.hw.memory_bytes_per_s.assign(static_cast<size_t>(in.hw.max_threads), 1e10);
  for (int t = 0; t < in.hw.max_threads; ++t) {
    k.dense_bytes_per_s.push_back(1e9 * (0.5 + 2 * u(rng)));
    k.gather_bytes_per_s.push_back(1e9 * (0.2 + u(rng)));
  }
  in.n_layer = 1 + static_cast<int64_t>(rng() % 8);
  in.dense = {{TensorType::kQ4_0, static_cast<uint64_t>(1e5 + 1e6 * u(rng))}};
  in.levels.clear();
  const int n_levels = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n_levels; ++i) {
    const double s = 0.1 + 0.8 * i / n_levels;
    in.levels.push_back(
        {s, 1 - s, true, rng() % 3 == 0 ? static_cast<uint64_t>(rng() % 500000) : 0});
  }
  in.cache.clear();
  const int n_cache = 2 + static_cast<int>(rng() % 7);
  double miss = 1;
  for (int i = 0; i < n_cache; ++i) {
    in.cache.push_back({static_cast<double>(i) / (n_cache - 1), i + 1 == n_cache ? 0.0 : miss});
    miss *= u(rng);
  }
  return in;
}

TEST(PlannerReferenceTest, SameOptimumAsEnumeratingEveryChoice) {
  std::mt19937 rng(2026);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const PlanInputs in = RandomInputs(rng);
    PlanRequest r;
    r.max_threads = 1 + static_cast<int>(rng() % 4);
    r.min_kv_bytes = 2000000;
    r.budget_bytes = 12000000 + rng() % 6000000;
    r.max_sparsity = rng() % 3 == 0 ? 0.5 : 1.0;
    r.min_tokens_per_s = rng() % 3 == 0 ? 200.0 + rng() % 1500 : 0;
    r.objective = rng() % 2 ? PlanRequest::Objective::kSpeed : PlanRequest::Objective::kMemory;
    const Reference ref = Enumerate(in, r);
    auto plan = SolvePlan(in, r);
    SCOPED_TRACE("trial " + std::to_string(trial));
    ASSERT_EQ(plan.ok(), ref.found) << (plan.ok() ? "planned" : plan.status().ToString());
    if (!plan.ok()) {
      ++infeasible;
      auto least = MinimumBudget(in, r);
      if (ref.least_memory == std::numeric_limits<uint64_t>::max()) {
        EXPECT_FALSE(least.ok());  // nothing meets the other constraints at any budget
      } else {
        ASSERT_TRUE(least.ok()) << least.status().ToString();
        EXPECT_EQ(*least, ref.least_memory);
      }
      continue;
    }
    ++feasible;
    // Z3 sees the times rounded to whole nanoseconds (three parts, so within 2 ns).
    if (r.objective == PlanRequest::Objective::kSpeed) {
      EXPECT_NEAR(plan->predicted_ms_per_token, ref.token_s * 1e3, 2e-6);
    } else {
      EXPECT_EQ(plan->memory_bytes, ref.memory);
      EXPECT_NEAR(plan->predicted_ms_per_token, ref.token_s * 1e3, 2e-6);
    }
    EXPECT_LE(plan->memory_bytes, r.budget_bytes);
  }
  // The random requests cover both outcomes.
  EXPECT_GT(feasible, 10);
  EXPECT_GT(infeasible, 5);
}

}  // namespace
}  // namespace sparrow::plan
