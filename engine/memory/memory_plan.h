#pragma once
// MemoryPlan: what the elastic consumers may hold, as the budget controller decided it; the
// scheduler applies a plan between two steps (Scheduler::ApplyMemoryPlan), never in one.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace sparrow {

struct MemoryPlan {
  int64_t version = 0;                            // rises with every plan
  std::optional<size_t> neuron_cache_bytes;       // NeuronStore::Resize; unset: unchanged
  std::string cause;                              // why, for the log
  std::chrono::steady_clock::time_point decided;  // for the re-plan latency
  // The KV pool (KvBlockPool::Resize, whole blocks, never under the scheduler's floor of one
  // full context); unset: unchanged.
  std::optional<size_t> kv_pool_bytes;
  // Compute threads (ThreadPool::set_active_threads), as the planner chose; unset: unchanged.
  std::optional<int> threads;
  // The FFN's sparsity level (SparsityLevel::Set: the nearest level the server may run at, none
  // above the one it started with), as the planner chose; unset: unchanged.
  std::optional<double> sparsity;
  // The device is short of memory (the budget is under its ceiling): buffers that grow on
  // demand stay as they are. A step takes no more tokens than the largest one before it (or a
  // small floor), and a batch that uses most of a layer's neurons gathers them through the cache
  // instead of staging the whole layer (the staging buffer is given back). Unset: unchanged.
  std::optional<bool> tight;
};

}  // namespace sparrow
