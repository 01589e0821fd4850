#pragma once
// MemoryPlan: what each memory user may hold and how the engine runs, as the budget controller
// decided it; the scheduler applies a plan between two steps (Scheduler::ApplyMemoryPlan), never
// in one, to every MemoryUser it names.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace sparrow {

// The budget's names of the memory users (MemoryUser::name).
inline constexpr const char* kKvPoolUser = "kv_pool";
inline constexpr const char* kScratchUser = "scratch";
inline constexpr const char* kNeuronCacheUser = "neuron_cache";

struct MemoryPlan {
  int64_t version = 0;                            // rises with every plan
  std::string cause;                              // why, for the log
  std::chrono::steady_clock::time_point decided;  // for the re-plan latency
  // What each user may hold, by name (MemoryUser::Resize; the KV pool in whole blocks, never
  // under the scheduler's floor of one full context); a user not named keeps its size.
  std::map<std::string, uint64_t, std::less<>> bytes;
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

  // The bytes for `user`, if the plan names it.
  std::optional<uint64_t> BytesFor(const std::string& user) const {
    const auto it = bytes.find(user);
    if (it == bytes.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace sparrow
