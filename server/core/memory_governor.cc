#include "server/core/memory_governor.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "engine/common/env.h"

namespace sparrow::server {
namespace {

// The monitor's clock: Env's steady clock, in milliseconds.
uint64_t NowMs() {
  return Env::Default()->NowMicros() / 1000;
}

}  // namespace

namespace {

BudgetPolicyOptions Elastic(const MemoryBudget& budget, BudgetPolicyOptions policy) {
  policy.ceiling_bytes = budget.elastic_ceiling();
  policy.floor_bytes = budget.elastic_floor();
  return policy;
}

std::string Mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

MemoryGovernor::MemoryGovernor(Scheduler* scheduler,
                               std::vector<std::unique_ptr<PressureSource>> sources,
                               const MemoryBudget& budget, BudgetPolicyOptions policy, int tick_ms)
    : scheduler_(scheduler), budget_(budget), policy_(Elastic(budget, policy)) {
  stats_.ceiling_bytes = budget_.ceiling();
  stats_.floor_bytes = budget_.floor();
  stats_.split = budget_.Split(policy_.target());
  stats_.budget_bytes = stats_.split.total();
  const MemorySplit& c = stats_.split;
  spdlog::info("memory: budget {} (weights {}, scratch {}, KV pool {} down to {}, neuron cache {})",
               Mib(budget_.ceiling()), Mib(c.weights), Mib(c.scratch), Mib(c.kv_pool),
               Mib(budget_.consumers().kv_min_bytes), Mib(c.neuron_cache));
  for (const auto& s : sources) stats_.sources.emplace_back(s->name());
  monitor_ = std::make_unique<PressureMonitor>(
      std::move(sources), tick_ms,
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
    Plan(*change);
  }
}

uint64_t MemoryGovernor::ElasticInUse() const {
  const SchedulerStats s = scheduler_->Stats();
  uint64_t bytes = static_cast<uint64_t>(s.kv.touched_blocks * scheduler_->kv_block_bytes());
  if (s.neuron_cache) bytes += s.neuron_cache->hot_bytes + s.neuron_cache->cache.mapped_bytes;
  return bytes;
}

void MemoryGovernor::OnTick(std::optional<uint64_t> room) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t before = policy_.target();
  if (auto change = policy_.OnTick(NowMs(), room)) {
    ++(change->bytes > before ? stats_.grows : stats_.operator_changes);
    Plan(*change);
  }
}

void MemoryGovernor::Report(PressureLevel level, const std::string& source) {
  OnEvent(source, PressureReading{level, ""});
}

void MemoryGovernor::SetOperatorBudget(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  spdlog::info("memory: operator budget {}", bytes ? Mib(*bytes) : std::string("cleared"));
  stats_.operator_budget_bytes = bytes;
  std::optional<uint64_t> elastic;
  if (bytes) elastic = budget_.ElasticFor(*bytes);
  if (auto change = policy_.SetOperatorLimit(elastic, NowMs())) {
    ++stats_.operator_changes;
    Plan(*change);
  }
}

void MemoryGovernor::Plan(const BudgetChange& change) {
  const MemorySplit split = budget_.Split(change.bytes);
  MemoryPlan plan;
  plan.version = ++stats_.plan_version;
  if (budget_.consumers().cache_max_bytes > 0) {
    plan.neuron_cache_bytes = static_cast<size_t>(split.neuron_cache);
  }
  plan.kv_pool_bytes = static_cast<size_t>(split.kv_pool);
  plan.cause = change.cause;
  plan.decided = std::chrono::steady_clock::now();
  spdlog::info("memory: budget {} -> {} (KV pool {}, neuron cache {}): {}",
               Mib(stats_.budget_bytes), Mib(split.total()), Mib(split.kv_pool),
               Mib(split.neuron_cache), change.cause);
  stats_.split = split;
  stats_.budget_bytes = split.total();
  scheduler_->ApplyMemoryPlan(std::move(plan));
}

int64_t MemoryGovernor::Replan(const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  Plan(BudgetChange{policy_.target(), cause});
  return stats_.plan_version;
}

MemoryGovernorStats MemoryGovernor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryGovernorStats s = stats_;
  const uint64_t now = NowMs();
  s.level = policy_.level(now);
  s.starved = policy_.starved(now);
  return s;
}

}  // namespace sparrow::server
