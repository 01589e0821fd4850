#pragma once
// The planner: PowerInfer-2's offline planner (section 5) solved with Z3's optimizer. From the
// inputs (plan_inputs.h) and the operator's request it chooses compute threads, the neuron-cache
// size, the KV pool and the sparsity level, maximising tokens/s under the memory budget (or
// minimising memory at a speed floor), and says which constraints bind. Thread-safe (each call
// owns its Z3 context); tens of milliseconds per call on the inputs of one model.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/plan/plan_inputs.h"

namespace sparrow::plan {

// The names the planner gives its constraints (in RunPlan::binding and in errors).
namespace constraint {
inline constexpr const char* kBudget = "budget";              // memory <= budget_bytes
inline constexpr const char* kThreads = "max_threads";        // threads <= max_threads
inline constexpr const char* kMinSpeed = "min_tokens_per_s";  // tokens/s >= the floor
inline constexpr const char* kMaxSparsity = "max_sparsity";   // the quality limit
inline constexpr const char* kMinKv = "min_kv";               // KV pool >= min_kv_bytes
}  // namespace constraint

struct PlanRequest {
  size_t budget_bytes = 0;
  int max_threads = 1;  // the core limit (the hardware profile's table caps it too)
  double min_tokens_per_s = 0;
  // The quality constraint: the highest share of FFN neurons skipped that is acceptable (the
  // profile has no perplexity per level; bench/RESULTS.md has measured ones).
  double max_sparsity = 1;
  enum class Objective { kSpeed, kMemory };
  Objective objective = Objective::kSpeed;  // kMemory: least memory at min_tokens_per_s
  size_t min_kv_bytes = 0;                  // KV pool at least (one full context, say)
  // Speed objective: budget left over after the fastest plan goes to the KV pool, up to this
  // (0 or below min_kv_bytes: the KV pool is min_kv_bytes).
  size_t max_kv_bytes = 0;
};

struct RunPlan {
  int threads = 1;
  size_t neuron_cache_bytes = 0;
  size_t kv_pool_bytes = 0;
  double sparsity = 0;
  double predicted_tokens_per_s = 0;
  double predicted_ms_per_token = 0;
  size_t memory_bytes = 0;           // resident + cache + level extra + KV + scratch
  std::vector<std::string> binding;  // constraint names (above) that limit the objective
  std::string objective = "speed";   // "speed" or "memory"
  // Context for a reader of the plan (not needed to apply it).
  size_t budget_bytes = 0;
  double cache_fraction = 0;  // of all bundles
  double miss_rate = 0;       // at that cache size
  double active_share = 1;    // neurons computed per token
  double flash_mib_per_token = 0;
  double dense_ms = 0, ffn_compute_ms = 0, flash_ms = 0;  // per token, the model's parts
  double solve_ms = 0;  // how long SolvePlan took (not written to plan files)
};

// The best plan. Infeasible requests fail naming the constraint that cannot be met and, when a
// larger budget would do, the smallest budget that works ("budget: ... needs 812.3 MiB
// (--budget-mb 813)"); bad requests (no threads, a negative floor) fail naming the field.
Result<RunPlan> SolvePlan(const PlanInputs& inputs, const PlanRequest& request);

// The least memory any plan meeting the request's other constraints needs (the budget ignored);
// fails like SolvePlan when the other constraints cannot be met at any budget.
Result<size_t> MinimumBudget(const PlanInputs& inputs, const PlanRequest& request);

}  // namespace sparrow::plan
