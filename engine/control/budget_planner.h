#pragma once
// BudgetPlanner: the Z3 planner (engine/plan) asked how to run under a whole-process budget the
// governor decided: how many compute threads, how much neuron cache and KV pool, which sparsity
// level, and the tokens/s to expect. Its inputs are this device's hardware profile (`sparrow
// profile-hw`) and the served model; the budget is translated from the governor's count of what
// does not move (MemoryBudget::fixed_bytes) into the planner's own, so the KV pool and the cache
// get the same bytes in both.
#include <functional>
#include <memory>
#include <optional>

#include "engine/common/result.h"
#include "engine/memory/memory_budget.h"
#include "engine/plan/hardware_profile.h"
#include "engine/plan/planner.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/activation_profile.h"
#include "engine/sparse/sparse_plan.h"

namespace sparrow {

// Plans a whole-process budget; an error (an infeasible budget, inputs not known yet) leaves the
// MemoryBudget's own split in force.
using PlanFn = std::function<Result<plan::RunPlan>(uint64_t budget_bytes)>;

struct BudgetPlannerOptions {
  plan::HardwareProfile hardware;
  std::shared_ptr<const ActivationProfile> profile;  // the model's, or null
  // The sparsity level the server started at: no plan goes past it (threshold policies).
  double max_sparsity = 0;
  int64_t step_tokens = 128;  // no step computes more (the planner's scratch)
  int io_depth = 128;         // the store's reads in flight
  int max_threads = 1;        // the compute pool's size
  // The share of neurons a decoded token uses, when known; else a PowerInfer file's is learnt
  // from the scheduler's counters once tokens ran (until then the planner answers Unavailable).
  std::optional<double> active_share;
};

// `model`, `scheduler` and `sparse` (null: dense) must outlive the function.
PlanFn MakeBudgetPlanner(BudgetPlannerOptions options, const Model& model,
                         const Scheduler& scheduler, std::shared_ptr<const SparsePlan> sparse,
                         const MemoryConsumers& consumers);

}  // namespace sparrow
