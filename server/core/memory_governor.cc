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

MemoryGovernor::MemoryGovernor(Scheduler* scheduler,
                               std::vector<std::unique_ptr<PressureSource>> sources,
                               const BudgetPolicyOptions& policy, int tick_ms)
    : scheduler_(scheduler), policy_(policy) {
  stats_.ceiling_bytes = policy.ceiling_bytes;
  stats_.budget_bytes = policy_.target();
  for (const auto& s : sources) stats_.sources.emplace_back(s->name());
  monitor_ = std::make_unique<PressureMonitor>(
      std::move(sources), tick_ms,
      [this](std::string_view source, const PressureReading& r) { OnEvent(source, r); },
      [this] { OnTick(); });
}

MemoryGovernor::~MemoryGovernor() {
  monitor_.reset();
}

void MemoryGovernor::OnEvent(std::string_view source, const PressureReading& r) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string cause = std::string(source) + ": " + std::string(PressureLevelName(r.level)) +
                            (r.detail.empty() ? "" : " (" + r.detail + ")");
  if (auto change = policy_.OnPressure(r.level, cause, NowMs())) {
    ++stats_.shrinks;
    Plan(*change);
  }
}

void MemoryGovernor::OnTick() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t before = policy_.target();
  if (auto change = policy_.OnTick(NowMs())) {
    ++(change->bytes > before ? stats_.grows : stats_.operator_changes);
    Plan(*change);
  }
}

void MemoryGovernor::Report(PressureLevel level, const std::string& source) {
  OnEvent(source, PressureReading{level, ""});
}

void MemoryGovernor::SetOperatorBudget(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  spdlog::info("memory: operator budget {}",
               bytes ? std::to_string(*bytes >> 20) + " MiB" : std::string("cleared"));
  if (auto change = policy_.SetOperatorLimit(bytes, NowMs())) {
    ++stats_.operator_changes;
    Plan(*change);
  }
}

void MemoryGovernor::Plan(const BudgetChange& change) {
  MemoryPlan plan;
  plan.version = ++stats_.plan_version;
  plan.neuron_cache_bytes = static_cast<size_t>(change.bytes);
  plan.cause = change.cause;
  plan.decided = std::chrono::steady_clock::now();
  spdlog::info("memory: neuron cache budget {} -> {} MiB: {}", stats_.budget_bytes >> 20,
               change.bytes >> 20, change.cause);
  stats_.budget_bytes = change.bytes;
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
  s.operator_budget_bytes = policy_.operator_limit();
  return s;
}

}  // namespace sparrow::server
