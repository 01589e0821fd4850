// The Scheduler's memory: applying memory plans to the memory users between two steps (the KV
// pool, the step's scratch, the FFN's cache), and the KV pool as a memory user.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "engine/kernels/thread_pool.h"
#include "engine/sched/scheduler.h"
#include "engine/sched/sequence.h"
#include "engine/sparse/activation_profile.h"

namespace sparrow {

void Scheduler::ApplyMemoryPlan(MemoryPlan plan) {
  if (plan.urgent) {
    // Only ever down, from this thread; the rest between two steps as usual.
    for (const auto& u : users_) {
      const std::optional<uint64_t> bytes = plan.bytes.For(u->kind());
      if (!bytes || *bytes >= u->capacity_bytes()) continue;
      const auto start = std::chrono::steady_clock::now();
      if (!u->ShrinkNow(*bytes)) continue;
      spdlog::info(
          "memory: {} shrunk to {} MiB at once, in {:.1f} ms, not waiting for the step "
          "in flight",
          u->name(), *bytes >> 20, MsBetween(start, std::chrono::steady_clock::now()));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_plan_ = std::move(plan);
  }
  cv_.notify_all();
}

void Scheduler::ApplyPendingPlan() {
  std::optional<MemoryPlan> plan;
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan.swap(pending_plan_);
  }
  if (!plan) return;
  // A plan may move KV blocks and change the FFN: the batches in flight land first.
  LandAll();
  const auto start = std::chrono::steady_clock::now();
  if (plan->threads && pool_) pool_->set_active_threads(*plan->threads);
  std::optional<double> sparsity;
  if (plan->sparsity) {
    sparsity = fp_.ffn().SetSparsity(*plan->sparsity);
    // The planner's levels are the profile's floats (0.3f for 0.3): only another level is news.
    if (sparsity && std::fabs(*sparsity - *plan->sparsity) > kSameSparsity) {
      spdlog::info("memory plan {}: sparsity {} is not a level this server may run at; {} instead",
                   plan->version, *plan->sparsity, *sparsity);
    }
  }
  std::string sizes;
  for (const auto& u : users_) {
    if (plan->tight) u->ApplyLevel(*plan->tight);
    const std::optional<uint64_t> bytes = plan->bytes.For(u->kind());
    if (!bytes) continue;
    if (const Status st = u->Resize(*bytes); !st.ok()) {
      spdlog::warn("memory plan {}: {} resize to {} bytes failed: {}", plan->version, u->name(),
                   *bytes, st.ToString());
    }
    sizes +=
        fmt::format("{}{} {} MiB", sizes.empty() ? "" : ", ", u->name(), u->capacity_bytes() >> 20);
  }
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - plan->decided).count();
  const double apply_ms = std::chrono::duration<double, std::milli>(now - start).count();
  spdlog::info(
      "memory plan {} applied ({}): {}, threads {}, sparsity {}{}, {:.1f} ms after the decision "
      "({:.1f} of them applying it)",
      plan->version, plan->cause, sizes.empty() ? "sizes kept" : sizes,
      plan->threads ? std::to_string(*plan->threads) : "kept",
      sparsity ? fmt::format("{}", *sparsity) : "kept",
      scratch_->tight() ? fmt::format(", tight (steps of at most {} tokens, no layer staging)",
                                      scratch_->StepCap(opts_.step_token_budget))
                        : "",
      ms, apply_ms);
  std::lock_guard<std::mutex> lock(mu_);
  if (sparsity) stats_.sparsity = sparsity;
  stats_.kv = kv_.Stats();
  stats_.memory_plan_version = plan->version;
  stats_.memory_plan_latency_ms = ms;
}

void Scheduler::ResizeKv(int64_t blocks) {
  int64_t preempted = 0;
  const Status st = planner_->ResizeKv(blocks, &preempted);
  {
    std::lock_guard<std::mutex> lock(mu_);
    CountLocked();
  }
  if (!st.ok()) {
    spdlog::warn("memory plan: KV pool resize to {} blocks failed: {}", blocks, st.ToString());
    return;
  }
  if (preempted > 0) {
    spdlog::info("memory plan: {} sequences preempted to shrink the KV pool to {} blocks",
                 preempted, blocks);
  }
}

}  // namespace sparrow
