#pragma once
// MemoryPlan: what each memory user may hold and how the engine runs, as the budget controller
// decided it; the scheduler applies a plan between two steps (Scheduler::ApplyMemoryPlan), never
// in one, to every MemoryUser it sizes.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/memory/memory_budget.h"
#include "engine/memory/memory_user.h"

namespace sparrow {

// What each kind of memory user may hold; a kind left unset keeps its size.
class MemoryUserBytes {
 public:
  void Set(MemoryUserKind kind, uint64_t bytes) { bytes_[Index(kind)] = bytes; }
  std::optional<uint64_t> For(MemoryUserKind kind) const { return bytes_[Index(kind)]; }

 private:
  static size_t Index(MemoryUserKind kind) { return static_cast<size_t>(kind); }
  std::array<std::optional<uint64_t>, kMemoryUserKinds> bytes_;
};

struct MemoryPlan {
  int64_t version = 0;                            // rises with every plan
  std::string cause;                              // why, for the log
  std::chrono::steady_clock::time_point decided;  // for the re-plan latency
  // What each user may hold, by kind (MemoryUser::Resize; the KV pool in whole blocks, never
  // under the scheduler's floor of one full context); a kind not set keeps its size.
  MemoryUserBytes bytes;
  // Compute threads (ThreadPool::set_active_threads), as the planner chose; unset: unchanged.
  std::optional<int> threads;
  // The FFN's sparsity level (FeedForward::SetSparsity: the nearest level the server may run
  // at, none above the one it started with), as the planner chose; unset: unchanged.
  std::optional<double> sparsity;
  // The device is short of memory (the budget is under its ceiling): buffers that grow on
  // demand stay as they are (MemoryUser::ApplyLevel). A step takes no more tokens than the
  // largest one before it (or a small floor), and a batch that uses most of a layer's neurons
  // gathers them through the cache instead of staging the whole layer. Unset: unchanged.
  std::optional<bool> tight;
  // Critical pressure: the users that can shrink at once (MemoryUser::ShrinkNow) do so from the
  // caller's thread, without waiting for the step in flight; the rest between two steps.
  bool urgent = false;

  // The users' part of `split` (the neuron cache's only `with_cache`: a model with its FFN in
  // memory has none to size).
  void SetSplit(const MemorySplit& split, bool with_cache) {
    bytes.Set(MemoryUserKind::kKvPool, split.kv_pool);
    bytes.Set(MemoryUserKind::kScratch, split.scratch);
    if (with_cache) bytes.Set(MemoryUserKind::kNeuronCache, split.neuron_cache);
  }
};

}  // namespace sparrow
