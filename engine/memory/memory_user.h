#pragma once
// MemoryUser: one consumer of the memory budget that a plan resizes (DESIGN.md, "every consumer
// of memory can be resized between two scheduler steps through one entry point"): the KV pool,
// the step's scratch, a neuron or expert cache. The scheduler applies a MemoryPlan to each user
// by name between two steps; the governor reads what each holds to judge the room.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/common/status.h"

namespace sparrow {

// What a memory user holds and may hold, as Scheduler::Stats reports it.
struct MemoryUserStats {
  std::string name;
  uint64_t held_bytes = 0, capacity_bytes = 0;
};

class MemoryUser {
 public:
  virtual ~MemoryUser() = default;

  // The budget's name for it, the key of MemoryPlan::bytes: "kv_pool", "scratch",
  // "neuron_cache".
  virtual std::string_view name() const = 0;
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
