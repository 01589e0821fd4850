#include "engine/control/memory_governor.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "engine/common/env.h"

namespace sparrow {
namespace {

BudgetPolicyOptions Elastic(const MemoryBudget& budget, BudgetPolicyOptions policy) {
  policy.ceiling_bytes = policy.ceiling_bytes > 0
                             ? std::min(policy.ceiling_bytes, budget.elastic_ceiling())
                             : budget.elastic_ceiling();
  policy.floor_bytes = budget.elastic_floor();
  return policy;
}

// What the planner's solver may take beside the process: `sparrow plan` peaks 30 MB over
// `sparrow info` on the KJV model (/usr/bin/time -v), with a margin.
constexpr uint64_t kSolverHeapBytes = uint64_t{48} << 20;

}  // namespace

MemoryGovernor::MemoryGovernor(Scheduler* scheduler,
                               std::vector<std::unique_ptr<PressureSource>> sources,
                               const MemoryBudget& budget, MemoryGovernorOptions options)
    : scheduler_(scheduler),
      budget_(budget),
      planner_(std::move(options.planner)),
      process_resident_(std::move(options.process_resident)),
      weights_resident_(std::move(options.weights_resident)),
      env_(options.env != nullptr ? options.env : Env::Default()),
      policy_(Elastic(budget, options.policy)) {
  stats_.ceiling_bytes = budget_.fixed_bytes() + policy_.options().ceiling_bytes;
  stats_.floor_bytes = budget_.floor();
  stats_.split = budget_.Split(policy_.target());
  stats_.budget_bytes = stats_.split.total();
  const MemorySplit& c = stats_.split;
  spdlog::info(
      "memory: budget {} of {} (process {}, weights {}, scratch {}, KV pool {} down to {}, neuron "
      "cache {})",
      WholeMib(stats_.budget_bytes), WholeMib(stats_.ceiling_bytes), WholeMib(c.baseline),
      WholeMib(c.weights), WholeMib(c.scratch), WholeMib(c.kv_pool),
      WholeMib(budget_.consumers().kv_min_bytes), WholeMib(c.neuron_cache));
  // The planner chooses the threads and the split from the start (no monitor thread yet); a
  // start under the consumers' sizes (what the device offered) is applied from the start too.
  if (planner_ || policy_.target() < budget_.elastic_ceiling()) {
    Plan(BudgetChange{policy_.target(), "start"});
  }
  for (const auto& s : sources) stats_.sources.emplace_back(s->name());
  monitor_ = std::make_unique<PressureMonitor>(
      std::move(sources), options.tick_ms,
      [this](std::string_view source, const PressureReading& r) { OnEvent(source, r); },
      [this](std::optional<uint64_t> room) { OnTick(room); });
}

MemoryGovernor::~MemoryGovernor() {
  monitor_.reset();
}

void MemoryGovernor::OnEvent(std::string_view source, const PressureReading& r) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string cause = std::string(source) + ": " + std::string(PressureLevelName(r.level)) +
                            (r.detail.empty() ? "" : " (" + r.detail + ")");
  if (auto change = policy_.OnPressure(r.level, cause, NowMs(), ElasticInUse())) {
    ++stats_.shrinks;
    // Critical: the users that can shrink do so at once; the rest wait for the step in flight.
    Plan(*change, /*solve=*/false, /*urgent=*/r.level == PressureLevel::kCritical);
  }
}

uint64_t MemoryGovernor::NowMs() const {
  return env_->NowMicros() / 1000;
}

MemorySplit MemoryGovernor::UsersHeld() const {
  MemorySplit held;
  for (const MemoryUserStats& u : scheduler_->Stats().memory) {
    switch (u.kind) {
      case MemoryUserKind::kKvPool:
        held.kv_pool += u.held_bytes;
        break;
      case MemoryUserKind::kScratch:
        held.scratch += u.held_bytes;
        break;
      case MemoryUserKind::kNeuronCache:
        held.neuron_cache += u.held_bytes;
        break;
    }
  }
  return held;
}

uint64_t MemoryGovernor::ElasticInUse() const {
  const MemorySplit held = UsersHeld();
  const uint64_t floor = budget_.consumers().scratch_min_bytes;
  return held.kv_pool + held.neuron_cache + (held.scratch > floor ? held.scratch - floor : 0);
}

void MemoryGovernor::OnTick(std::optional<uint64_t> room) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t before = policy_.target();
  const uint64_t in_use = ElasticInUse();
  if (room && process_resident_) room = budget_.RoomForElastic(*room, process_resident_(), in_use);
  room_ = room;
  const uint64_t now = NowMs();
  if (auto change = policy_.OnTick(now, room, in_use)) {
    // Down on a tick: the operator's cap, or a target the room no longer backs.
    ++(change->bytes > before
           ? stats_.grows
           : (policy_.operator_limit() ? stats_.operator_changes : stats_.shrinks));
    // Growth and the operator's cap come when it is quiet; a target the room no longer backs is
    // pressure (the policy says so), and is not planned until it is quiet again.
    Plan(*change, /*solve=*/policy_.level(now) == PressureLevel::kNone);
  } else if (plan_deferred_ && policy_.level(now) == PressureLevel::kNone && RoomToSolve()) {
    Plan(BudgetChange{policy_.target(), "quiet again: the budget planned"});
  }
}

void MemoryGovernor::Report(PressureLevel level, const std::string& source) {
  OnEvent(source, PressureReading{level, ""});
}

void MemoryGovernor::SetOperatorBudget(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  spdlog::info("memory: operator budget {}", bytes ? WholeMib(*bytes) : std::string("cleared"));
  stats_.operator_budget_bytes = bytes;
  std::optional<uint64_t> elastic;
  if (bytes) elastic = budget_.ElasticFor(*bytes);
  if (auto change = policy_.SetOperatorLimit(elastic, NowMs())) {
    ++stats_.operator_changes;
    Plan(*change);
  }
}

bool MemoryGovernor::RoomToSolve() const {
  return !room_ || *room_ >= kSolverHeapBytes;
}

void MemoryGovernor::Plan(const BudgetChange& change, bool solve, bool urgent) {
  MemorySplit split = budget_.Split(change.bytes);
  MemoryPlan plan;
  plan.version = ++stats_.plan_version;
  if (planner_ && solve && RoomToSolve()) {
    Consult(split, &plan);
    plan_deferred_ = false;
  } else if (planner_) {
    plan_deferred_ = true;
    stats_.run_plan.reset();
    stats_.plan_error =
        "under memory pressure the budget's own split applies; the planner runs once it is quiet "
        "with room for its solver (" +
        WholeMib(kSolverHeapBytes) + ")";
  }
  plan.SetSplit(split, budget_.consumers().cache_max_bytes > 0);
  plan.urgent = urgent;
  // Under the ceiling, buffers that grow on demand must not take what the budget gave back.
  plan.tight = change.bytes < policy_.options().ceiling_bytes;
  plan.cause = change.cause;
  plan.decided = std::chrono::steady_clock::now();
  spdlog::info("memory: budget {} -> {} (KV pool {}, neuron cache {}, scratch {}): {}",
               WholeMib(stats_.budget_bytes), WholeMib(split.total()), WholeMib(split.kv_pool),
               WholeMib(split.neuron_cache), WholeMib(split.scratch), change.cause);
  stats_.split = split;
  stats_.budget_bytes = split.total();
  scheduler_->ApplyMemoryPlan(std::move(plan));
}

void MemoryGovernor::Consult(MemorySplit& split, MemoryPlan* plan) {
  const uint64_t total = split.total();
  Result<plan::RunPlan> run = planner_(total);
  if (!run.ok()) {
    // An infeasible budget: the split stands, and the operator sees why.
    stats_.plan_error = run.status().message();
    stats_.run_plan.reset();
    spdlog::warn("memory: the planner has no plan for {}: {}", WholeMib(total), stats_.plan_error);
    return;
  }
  const MemoryConsumers& c = budget_.consumers();
  // The plan's choices within what the consumers can take; what the cache does not take stays
  // with the KV pool, as in the split.
  split.neuron_cache = std::min<uint64_t>(run->neuron_cache_bytes, c.cache_max_bytes);
  const uint64_t held = split.baseline + split.weights + split.scratch + split.neuron_cache;
  const uint64_t rest = total > held ? total - held : 0;
  split.kv_pool = std::clamp<uint64_t>(rest, c.kv_min_bytes, c.kv_max_bytes);
  plan->threads = run->threads;
  // The scheduler keeps to the levels this server may run at (SparsityLevel::Set).
  plan->sparsity = run->sparsity;
  std::string binding;
  for (const std::string& b : run->binding) binding += (binding.empty() ? "" : ", ") + b;
  spdlog::info(
      "memory: plan for {}: {} threads, sparsity {}, neuron cache {}, KV pool {}, predicted "
      "{:.2f} tokens/s (binding: {}; solved in {:.1f} ms)",
      WholeMib(total), run->threads, run->sparsity, WholeMib(split.neuron_cache),
      WholeMib(split.kv_pool), run->predicted_tokens_per_s, binding.empty() ? "none" : binding,
      run->solve_ms);
  stats_.plan_error.clear();
  stats_.run_plan = std::move(run).value();
  // The solver's heap goes back to the device, not to malloc's free lists.
  malloc_trim(0);
}

int64_t MemoryGovernor::Replan(const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  Plan(BudgetChange{policy_.target(), cause});
  return stats_.plan_version;
}

MemoryGovernorStats MemoryGovernor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryGovernorStats s = stats_;
  s.held = UsersHeld();
  s.held.baseline = s.split.baseline;
  s.held.weights = weights_resident_ ? weights_resident_() : s.split.weights;
  if (process_resident_) s.rss_bytes = process_resident_();
  const uint64_t now = NowMs();
  s.level = policy_.level(now);
  s.starved = policy_.starved(now);
  return s;
}

}  // namespace sparrow
