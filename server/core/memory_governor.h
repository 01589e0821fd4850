#pragma once
// MemoryGovernor: sparrowd's budget controller. It watches the pressure sources this machine has
// (PressureMonitor), decides with BudgetPolicy how many bytes the neuron cache may hold, and hands
// each decision to the scheduler as a MemoryPlan, which applies it between two steps: when the
// device wants memory back the cache shrinks and RSS falls while requests keep running; when it
// is quiet again the cache grows back. Every change is logged with its cause. One per served
// model with a neuron store; thread-safe.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory/budget_policy.h"
#include "engine/memory/pressure_monitor.h"
#include "engine/sched/scheduler.h"

namespace sparrow::server {

struct MemoryGovernorStats {
  uint64_t budget_bytes = 0;   // the neuron cache's target now
  uint64_t ceiling_bytes = 0;  // with no pressure
  std::optional<uint64_t> operator_budget_bytes;
  PressureLevel level = PressureLevel::kNone;
  bool starved = false;
  int64_t plan_version = 0;
  int64_t shrinks = 0, grows = 0, operator_changes = 0;
  std::vector<std::string> sources;
};

class MemoryGovernor {
 public:
  // `scheduler` must outlive the governor. `sources`: DetectPressureSources(), or the tests'.
  MemoryGovernor(Scheduler* scheduler, std::vector<std::unique_ptr<PressureSource>> sources,
                 const BudgetPolicyOptions& policy, int tick_ms = 100);
  ~MemoryGovernor();

  // The operator's budget for the neuron cache (nullopt clears it).
  void SetOperatorBudget(std::optional<uint64_t> bytes);
  // A level heard from outside the machine's own sources (the host app's onTrimMemory).
  void Report(PressureLevel level, const std::string& source);
  // Plans the current budget again (the operator's "replan"): a new plan version, applied
  // between two steps like any other. Returns the version.
  int64_t Replan(const std::string& cause);

  MemoryGovernorStats stats() const;

 private:
  void OnEvent(std::string_view source, const PressureReading& reading);
  void OnTick();
  // Hands a change to the scheduler (under mu_).
  void Plan(const BudgetChange& change);

  Scheduler* scheduler_;
  mutable std::mutex mu_;
  BudgetPolicy policy_;
  MemoryGovernorStats stats_;
  std::unique_ptr<PressureMonitor> monitor_;  // last: its thread calls into the rest
};

}  // namespace sparrow::server
