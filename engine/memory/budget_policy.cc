#include "engine/memory/budget_policy.h"

#include <algorithm>

namespace sparrow {

BudgetPolicy::BudgetPolicy(const BudgetPolicyOptions& options)
    : o_(options),
      target_(std::max(options.start_bytes > 0
                           ? std::min(options.start_bytes, options.ceiling_bytes)
                           : options.ceiling_bytes,
                       options.floor_bytes)) {}

uint64_t BudgetPolicy::cap() const {
  const uint64_t c = std::max(o_.ceiling_bytes, o_.floor_bytes);
  return operator_limit_ ? std::max(o_.floor_bytes, std::min(c, *operator_limit_)) : c;
}

std::optional<BudgetChange> BudgetPolicy::MoveTo(uint64_t bytes, std::string cause) {
  bytes = std::clamp(bytes, o_.floor_bytes, std::max(cap(), o_.floor_bytes));
  if (bytes == target_) return std::nullopt;
  target_ = bytes;
  return BudgetChange{bytes, std::move(cause)};
}

std::optional<BudgetChange> BudgetPolicy::OnPressure(PressureLevel heard, std::string_view cause,
                                                     uint64_t now_ms,
                                                     std::optional<uint64_t> in_use) {
  if (heard == PressureLevel::kNone) return std::nullopt;
  last_level_ = std::max(level(now_ms), heard);
  last_signal_ms_ = now_ms;
  if (heard == PressureLevel::kCritical) last_critical_ms_ = now_ms;
  const int i = static_cast<int>(heard);
  if (acted_[i] && now_ms - acted_ms_[i] < o_.repeat_ms) return std::nullopt;
  acted_[i] = true;
  acted_ms_[i] = now_ms;
  // A step takes its share of what is held, not of a target that is partly never touched.
  const uint64_t base = in_use ? std::min(target_, *in_use) : target_;
  uint64_t want = target_;
  switch (heard) {
    case PressureLevel::kCritical:
      want = o_.floor_bytes;
      break;
    case PressureLevel::kMedium:
      want = base / 2;
      break;
    case PressureLevel::kLow:
      want = base - base / 5;
      break;
    case PressureLevel::kNone:
      break;
  }
  return MoveTo(want, std::string(cause));
}

std::optional<BudgetChange> BudgetPolicy::OnTick(uint64_t now_ms, std::optional<uint64_t> room,
                                                 std::optional<uint64_t> in_use) {
  if (target_ > cap()) return MoveTo(cap(), "operator");
  if (auto clamp = ClampToRoom(now_ms, room, in_use)) return clamp;
  if (target_ >= cap()) return std::nullopt;
  if (last_signal_ms_ && now_ms - *last_signal_ms_ < o_.quiet_ms) return std::nullopt;
  if (now_ms - last_grow_ms_ < o_.grow_every_ms && last_grow_ms_ != 0) return std::nullopt;
  auto step = std::max<uint64_t>(
      1, static_cast<uint64_t>(static_cast<double>(std::max(o_.ceiling_bytes, uint64_t{1})) *
                               o_.grow_fraction));
  if (room) {
    // What was granted and is not yet held will be taken without asking: the room must cover it
    // before any more is granted, or the consumers fill past what the device has.
    const uint64_t unbacked = in_use && *in_use < target_ ? target_ - *in_use : 0;
    step = std::min(step, *room > unbacked ? *room - unbacked : 0);
  }
  if (step == 0) return std::nullopt;  // no room yet: try again on the next tick
  last_grow_ms_ = now_ms;
  return MoveTo(target_ + step, "no pressure: growing back");
}

std::optional<BudgetChange> BudgetPolicy::ClampToRoom(uint64_t now_ms, std::optional<uint64_t> room,
                                                      std::optional<uint64_t> in_use) {
  if (!room || !in_use) return std::nullopt;
  const uint64_t backed = *in_use + *room;
  const uint64_t slack = std::max<uint64_t>(uint64_t{1} << 20, o_.ceiling_bytes / 50);
  if (target_ <= backed + slack || target_ <= o_.floor_bytes) return std::nullopt;
  if (clamped_ms_ && now_ms - *clamped_ms_ < o_.repeat_ms) return std::nullopt;
  clamped_ms_ = now_ms;
  // The device is tight: growing back waits for a quiet spell as after any signal.
  last_signal_ms_ = now_ms;
  last_level_ = std::max(level(now_ms), PressureLevel::kLow);
  return MoveTo(backed, "headroom: " + std::to_string(*room >> 20) + " MiB of room beside " +
                            std::to_string(*in_use >> 20) + " MiB held cannot back " +
                            std::to_string(target_ >> 20) + " MiB");
}

std::optional<BudgetChange> BudgetPolicy::SetOperatorLimit(std::optional<uint64_t> bytes,
                                                           uint64_t now_ms) {
  operator_limit_ = bytes;
  const std::string cause = bytes ? "operator budget " + std::to_string(*bytes) + " bytes"
                                  : std::string("operator budget cleared");
  if (target_ > cap()) return MoveTo(cap(), cause);
  // Up to the operator's word at once, unless the device said otherwise within the quiet spell.
  if (level(now_ms) == PressureLevel::kNone) return MoveTo(cap(), cause);
  return std::nullopt;
}

PressureLevel BudgetPolicy::level(uint64_t now_ms) const {
  if (!last_signal_ms_ || now_ms - *last_signal_ms_ >= o_.quiet_ms) return PressureLevel::kNone;
  return last_level_;
}

bool BudgetPolicy::starved(uint64_t now_ms) const {
  if (operator_limit_ && *operator_limit_ < o_.floor_bytes) return true;
  return target_ <= o_.floor_bytes && last_critical_ms_ &&
         now_ms - *last_critical_ms_ < o_.quiet_ms;
}

}  // namespace sparrow
