#pragma once
// MemoryUser: one consumer of the memory budget that a plan resizes (DESIGN.md, "every consumer
// of memory can be resized between two scheduler steps through one entry point"): the KV pool,
// the step's scratch, a neuron or expert cache. The scheduler applies a MemoryPlan to each user
// by its kind between two steps; the governor reads what each holds to judge the room.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/common/status.h"

namespace sparrow {

// The budget's kinds of memory user: the parts of MemorySplit a plan resizes.
enum class MemoryUserKind { kKvPool, kScratch, kNeuronCache };
inline constexpr int kMemoryUserKinds = 3;

// The kind's name in logs, stats and the admin API: "kv_pool", "scratch", "neuron_cache".
std::string_view MemoryUserName(MemoryUserKind kind);

// What a memory user holds and may hold, as Scheduler::Stats reports it.
struct MemoryUserStats {
  MemoryUserKind kind = MemoryUserKind::kKvPool;
  std::string name;  // MemoryUserName(kind)
  uint64_t held_bytes = 0, capacity_bytes = 0;
};

class MemoryUser {
 public:
  virtual ~MemoryUser() = default;

  // Which part of the budget it is: what MemoryPlan::bytes sizes it by.
  virtual MemoryUserKind kind() const = 0;
  std::string_view name() const { return MemoryUserName(kind()); }
  // What it holds now: blocks written, buffers grown, records filled; not what it may hold.
  // Any thread.
  virtual uint64_t held_bytes() const = 0;
  // The most it may hold now (the last Resize, or its configured size).
  virtual uint64_t capacity_bytes() const = 0;
  // Holds at most `bytes` from now on: shrinking gives memory back to the OS, growing lets it
  // fill. The scheduler's thread, between two steps.
  virtual Status Resize(uint64_t bytes) = 0;
  // The device is short of memory (`tight`, the budget under its ceiling): buffers that grow on
  // demand stay as they are. Between two steps.
  virtual void ApplyLevel(bool tight) { (void)tight; }
  // Critical pressure: shrinks to `bytes` at once from any thread, not waiting for the step in
  // flight. False when this user cannot (the next plan's Resize does it between steps).
  virtual bool ShrinkNow(uint64_t bytes) {
    (void)bytes;
    return false;
  }
};

}  // namespace sparrow
