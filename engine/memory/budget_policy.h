#pragma once
// BudgetPolicy: how many bytes the elastic consumers (neuron cache, KV pool) may hold, given what
// the pressure sources and the operator say. It shrinks fast and grows slowly: a critical signal
// drops to the floor at once, medium halves, low takes a fifth off (a level acts again only after
// `repeat_ms`); after `quiet_ms` with no signal it grows a step of the ceiling every
// `grow_every_ms`. Never below the floor the plan needs to make progress: when even that is more
// than the device allows, starved() says so, and the server refuses new requests (503) while the
// running ones keep going. Pure logic on a clock the caller passes in; not thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/memory/pressure_level.h"

namespace sparrow {

struct BudgetPolicyOptions {
  uint64_t ceiling_bytes = 0;  // with no pressure and no operator limit
  uint64_t floor_bytes = 0;    // the least the plan needs to make progress
  // The first target when lower than the ceiling (0: the ceiling): what the device offered at
  // start. The target grows from there as any other, when the sources see room.
  uint64_t start_bytes = 0;
  uint64_t repeat_ms = 1000;
  uint64_t quiet_ms = 10000;
  uint64_t grow_every_ms = 2000;
  double grow_fraction = 0.10;  // of the ceiling, per step
};

struct BudgetChange {
  uint64_t bytes = 0;
  std::string cause;  // "psi: critical (full stall ...)", "operator", "grow": for the log
};

class BudgetPolicy {
 public:
  explicit BudgetPolicy(const BudgetPolicyOptions& options);

  // A source's reading; a change of target when it moves one. `in_use`: the bytes the elastic
  // consumers really hold now (a KV pool's blocks never written cost nothing); medium and low
  // then take their share of that rather than of the target, so that each step gives memory
  // back.
  std::optional<BudgetChange> OnPressure(PressureLevel heard, std::string_view cause,
                                         uint64_t now_ms,
                                         std::optional<uint64_t> in_use = std::nullopt);
  // The monitor's tick: grows back after a quiet spell, each step at most `room` (what the
  // sources see free before they would call it pressure: growing into the memory another process
  // took back would only bring the next squeeze). `in_use` as for OnPressure: the part of the
  // target not yet held is taken out of the room first, since the consumers will fill it.
  // With both, a target that `in_use` plus `room` cannot back is lowered to what they can (at
  // most once per repeat_ms): the consumers would otherwise fill it past the limit between two
  // of the kernel's events, which come only once reclaim already fails.
  std::optional<BudgetChange> OnTick(uint64_t now_ms, std::optional<uint64_t> room = std::nullopt,
                                     std::optional<uint64_t> in_use = std::nullopt);
  // The operator's explicit budget for the elastic consumers (nullopt clears it): it applies at
  // once, down or up (to the ceiling when cleared), except that while pressure was heard within
  // quiet_ms the target only goes down, growing back later like any other growth.
  std::optional<BudgetChange> SetOperatorLimit(std::optional<uint64_t> bytes, uint64_t now_ms);

  uint64_t target() const { return target_; }
  // The most the target may grow to now: the ceiling, or the operator's limit.
  uint64_t cap() const;
  std::optional<uint64_t> operator_limit() const { return operator_limit_; }
  // The highest level heard within quiet_ms (kNone once quiet).
  PressureLevel level(uint64_t now_ms) const;
  // Less than the floor is wanted: the operator's limit is under it, or critical pressure
  // persists with the target already at the floor.
  bool starved(uint64_t now_ms) const;
  const BudgetPolicyOptions& options() const { return o_; }

 private:
  std::optional<BudgetChange> MoveTo(uint64_t bytes, std::string cause);
  std::optional<BudgetChange> ClampToRoom(uint64_t now_ms, std::optional<uint64_t> room,
                                          std::optional<uint64_t> in_use);

  BudgetPolicyOptions o_;
  uint64_t target_;
  std::optional<uint64_t> operator_limit_;
  PressureLevel last_level_ = PressureLevel::kNone;
  // When each level last acted and when any signal was last heard.
  uint64_t acted_ms_[4] = {0, 0, 0, 0};
  bool acted_[4] = {false, false, false, false};
  std::optional<uint64_t> last_signal_ms_, last_critical_ms_, clamped_ms_;
  uint64_t last_grow_ms_ = 0;
};

}  // namespace sparrow
