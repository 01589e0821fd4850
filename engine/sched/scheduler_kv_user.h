#pragma once
// The scheduler's KV pool as a MemoryUser (kKvPool): it holds the blocks written, may hold the
// pool's blocks, and resizes in whole blocks between the floor of one full context and the pool
// as configured, preempting the newest sequences when the blocks in use do not fit
// (Scheduler::ResizeKv). The scheduler's own; not for other modules.
#include "engine/memory/memory_plan.h"
#include "engine/memory/memory_user.h"
#include "engine/sched/scheduler.h"

namespace sparrow {

class Scheduler::KvPoolUser final : public MemoryUser {
 public:
  explicit KvPoolUser(Scheduler* scheduler) : s_(scheduler) {}

  MemoryUserKind kind() const override { return MemoryUserKind::kKvPool; }
  uint64_t held_bytes() const override {
    std::lock_guard<std::mutex> lock(s_->mu_);
    return static_cast<uint64_t>(s_->stats_.kv.touched_blocks * s_->kv_block_bytes_);
  }
  uint64_t capacity_bytes() const override {
    std::lock_guard<std::mutex> lock(s_->mu_);
    return static_cast<uint64_t>(s_->stats_.kv.total_blocks * s_->kv_block_bytes_);
  }
  Status Resize(uint64_t bytes) override {
    const auto want = static_cast<int64_t>(std::min<uint64_t>(
        bytes / static_cast<uint64_t>(s_->kv_block_bytes_), static_cast<uint64_t>(INT64_MAX)));
    s_->ResizeKv(std::clamp(want, s_->min_kv_blocks_, s_->opts_.kv_blocks));
    return Status::Ok();
  }

 private:
  Scheduler* s_;
};

}  // namespace sparrow
