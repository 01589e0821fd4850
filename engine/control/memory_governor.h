#pragma once
// MemoryGovernor: the engine's budget controller. It watches the pressure sources this machine
// has (PressureMonitor), decides with BudgetPolicy how many bytes the elastic consumers may hold,
// splits them among the memory users (MemoryBudget, or the planner: BudgetPlanner), and hands
// each decision to the scheduler as a MemoryPlan, which applies it to the users between two
// steps: when the device wants memory back the KV pool, the cache and the scratch shrink and RSS
// falls while requests keep running; when it is quiet again they grow back. Every change is
// logged with its cause. The one route of a budget change: operator or pressure -> governor ->
// planner -> scheduler -> memory users. One per served model; thread-safe.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/env.h"
#include "engine/control/budget_planner.h"
#include "engine/memory/budget_policy.h"
#include "engine/memory/memory_budget.h"
#include "engine/memory/pressure_monitor.h"
#include "engine/plan/planner.h"
#include "engine/sched/scheduler.h"

namespace sparrow {

struct MemoryGovernorStats {
  // The whole process's budget: now, with no pressure, and the least that makes progress.
  uint64_t budget_bytes = 0;
  uint64_t ceiling_bytes = 0;
  uint64_t floor_bytes = 0;
  MemorySplit split;  // budget_bytes among the consumers
  // What they hold now (the process's baseline as measured at load, the weights as they are
  // counted in the budget, the users' held bytes): what the budget is about.
  MemorySplit held;
  uint64_t rss_bytes = 0;  // the process's resident bytes (with process_resident), to compare
  std::optional<uint64_t> operator_budget_bytes;
  // The Z3 planner's last plan for the budget (with a planner), or why there is none.
  std::optional<plan::RunPlan> run_plan;
  std::string plan_error;
  PressureLevel level = PressureLevel::kNone;
  bool starved = false;
  int64_t plan_version = 0;
  int64_t shrinks = 0, grows = 0, operator_changes = 0;
  std::vector<std::string> sources;
};

struct MemoryGovernorOptions {
  // The policy's ceiling and floor are the budget's elastic ones (a lower ceiling here, the
  // device's limit, is kept; so are its other fields).
  BudgetPolicyOptions policy;
  int tick_ms = 100;  // how often the sources' room is read
  // With a planner (MakeBudgetPlanner), every budget is planned by it (the split, the thread
  // count and the sparsity level).
  PlanFn planner;
  // With it (ProcessResidentBytes), the sources' room is first charged with the fixed part the
  // process does not hold yet (MemoryBudget::RoomForElastic).
  std::function<uint64_t()> process_resident;
  // The bytes of the weights the process holds now (MappingResidentBytes of the model's
  // mapping); null: the budget's figure for them.
  std::function<uint64_t()> weights_resident;
  Env* env = nullptr;  // the clock; null: Env::Default()
};

class MemoryGovernor {
 public:
  // `scheduler` must outlive the governor. `sources`: DetectPressureSources(), or the tests'.
  MemoryGovernor(Scheduler* scheduler, std::vector<std::unique_ptr<PressureSource>> sources,
                 const MemoryBudget& budget, MemoryGovernorOptions options);
  ~MemoryGovernor();

  // The operator's budget for the whole process (nullopt clears it): what is left after the
  // weights and the scratch goes to the KV pool and the neuron cache.
  void SetOperatorBudget(std::optional<uint64_t> bytes);
  // A level heard from outside the machine's own sources (the host app's onTrimMemory).
  void Report(PressureLevel level, const std::string& source);
  // Plans the current budget again (the operator's "replan"): a new plan version, applied
  // between two steps like any other. Returns the version.
  int64_t Replan(const std::string& cause);

  MemoryGovernorStats stats() const;

 private:
  void OnEvent(std::string_view source, const PressureReading& reading);
  void OnTick(std::optional<uint64_t> room);
  // What the elastic part really holds now (blocks and records written, scratch grown past its
  // floor), from the scheduler's memory users.
  uint64_t ElasticInUse() const;
  // What the scheduler's memory users hold now (the KV pool, scratch and cache of a split).
  MemorySplit UsersHeld() const;
  uint64_t NowMs() const;
  // Lets the planner choose the split of `split`'s total and the thread count (under mu_).
  void Consult(MemorySplit& split, MemoryPlan* plan);
  // Hands a change to the scheduler (under mu_). `solve`: the planner may be asked. It is not
  // under pressure, nor while the sources see less room than the solver's heap takes (Z3 peaks at
  // ~30 MB over the process): the budget's own split applies, and the planner runs once it is
  // quiet with room for it (a solve in a squeezed cgroup got the hog beside it OOM-killed).
  // `urgent`: critical pressure (MemoryPlan::urgent).
  void Plan(const BudgetChange& change, bool solve = true, bool urgent = false);
  bool RoomToSolve() const;

  Scheduler* scheduler_;
  const MemoryBudget budget_;
  const PlanFn planner_;
  const std::function<uint64_t()> process_resident_;
  const std::function<uint64_t()> weights_resident_;
  Env* const env_;
  bool plan_deferred_ = false;    // a budget applied without the planner, to plan once quiet
  std::optional<uint64_t> room_;  // the sources' last room for the elastic part
  mutable std::mutex mu_;
  BudgetPolicy policy_;
  MemoryGovernorStats stats_;
  std::unique_ptr<PressureMonitor> monitor_;  // last: its thread calls into the rest
};

}  // namespace sparrow
