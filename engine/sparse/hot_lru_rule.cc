#include "engine/sparse/hot_lru_rule.h"

namespace sparrow {
namespace {

constexpr int32_t kNone = -1, kOut = -2;
constexpr int64_t kWindowTokens = 16;

}  // namespace

HotLruRule::HotLruRule(int64_t n_layer, int64_t n_ff, double configured_share)
    : n_layer_(n_layer), n_ff_(n_ff), configured_(configured_share), share_(configured_share) {}

void HotLruRule::CountLru(int64_t lookups, int64_t hits) {
  lookups_ += lookups;
  hits_ += hits;
}

void HotLruRule::GhostUnlink(int64_t key) {
  const int32_t p = prev_[key], n = next_[key];
  (p == kNone ? head_ : next_[p]) = n;
  (n == kNone ? tail_ : prev_[n]) = p;
  prev_[key] = next_[key] = kOut;
  --size_;
}

void HotLruRule::GhostUse(int64_t key, int64_t slots) {
  const bool present = prev_[key] != kOut;
  if (present) {
    ++hits_;
    GhostUnlink(key);
  }
  prev_[key] = kNone;
  next_[key] = head_;
  (head_ == kNone ? tail_ : prev_[head_]) = static_cast<int32_t>(key);
  head_ = static_cast<int32_t>(key);
  ++size_;
  while (size_ > slots && tail_ != kNone) GhostUnlink(tail_);
}

void HotLruRule::CountGhost(int32_t layer, std::span<const int32_t> cold, int64_t slots) {
  if (prev_.empty()) return;
  lookups_ += static_cast<int64_t>(cold.size());
  for (int32_t id : cold) GhostUse(layer * n_ff_ + id, slots);
}

std::optional<double> HotLruRule::EndCall(int64_t lru_slots, bool lru_full) {
  if (++calls_ < kWindowTokens * n_layer_) return std::nullopt;
  last_lookups_ = lookups_;
  last_hits_ = hits_;
  const int64_t lookups = lookups_, hits = hits_;
  calls_ = lookups_ = hits_ = 0;
  if (!given_away()) {
    const bool thrashing =
        lru_slots > 0 && lru_full && lookups > 2 * lru_slots && hits * 20 < lookups;
    if (!thrashing || configured_ >= 1.0) return std::nullopt;
    share_ = 1.0;
    const auto keys = static_cast<size_t>(n_layer_ * n_ff_);
    prev_.assign(keys, kOut);
    next_.assign(keys, kOut);
    head_ = tail_ = kNone;
    size_ = 0;
    return share_;
  }
  if (lookups == 0 || hits * 5 < lookups) return std::nullopt;
  share_ = configured_;
  prev_ = {};
  next_ = {};
  head_ = tail_ = kNone;
  size_ = 0;
  return share_;
}

}  // namespace sparrow
