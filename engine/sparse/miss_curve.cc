#include "engine/sparse/miss_curve.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/sparse/hot_lru_rule.h"
#include "engine/sparse/neuron_cache.h"

namespace sparrow {

NeuronTrace::NeuronTrace(int64_t n_layer, int64_t n_ff)
    : n_layer_(n_layer), n_ff_(n_ff), layers_(static_cast<size_t>(n_layer)) {}

void NeuronTrace::Append(int64_t layer, std::span<const int32_t> active) {
  Layer& l = layers_[layer];
  l.ids.insert(l.ids.end(), active.begin(), active.end());
  l.offsets.push_back(static_cast<int64_t>(l.ids.size()));
}

int64_t NeuronTrace::tokens() const {
  int64_t n = n_layer_ > 0 ? tokens(0) : 0;
  for (int64_t l = 1; l < n_layer_; ++l) n = std::min(n, tokens(l));
  return n;
}

std::span<const int32_t> NeuronTrace::Active(int64_t token, int64_t layer) const {
  const Layer& l = layers_[layer];
  return {l.ids.data() + l.offsets[token],
          static_cast<size_t>(l.offsets[token + 1] - l.offsets[token])};
}

namespace {

// Misses of one (token, layer) under a policy; the bundles it holds are its business.
class ReplayCache {
 public:
  virtual ~ReplayCache() = default;
  virtual int64_t Use(int64_t layer, std::span<const int32_t> ids) = 0;
};

class TwoQueueReplay : public ReplayCache {
 public:
  TwoQueueReplay(const NeuronTrace& trace, size_t record_bytes, uint64_t bytes)
      : cache_(trace.n_layer(), trace.n_ff(), record_bytes, bytes) {}
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    records_.resize(ids.size());
    misses_.clear();
    // Slots are never written here, so the cache's mapping costs address space, not memory.
    cache_.Acquire(static_cast<int32_t>(layer), ids, records_.data(), &misses_);
    // A bypassed bundle (no slot) is read too: a miss.
    int64_t missed = static_cast<int64_t>(misses_.size());
    for (uint8_t* r : records_) missed += r == nullptr;
    cache_.Release(static_cast<int32_t>(layer), ids, records_);
    return missed;
  }
  bool full() const {
    const NeuronCacheStats s = cache_.stats();
    return s.capacity > 0 && s.used >= s.capacity;
  }

 private:
  NeuronCache cache_;
  std::vector<uint8_t*> records_;
  std::vector<int32_t> misses_;
};

// Recency over every bundle: an intrusive list, most recent first.
class WindowReplay : public ReplayCache {
 public:
  WindowReplay(const NeuronTrace& trace, int64_t capacity)
      : n_ff_(trace.n_ff()),
        capacity_(capacity),
        prev_(static_cast<size_t>(trace.n_layer() * trace.n_ff()), kOut),
        next_(prev_.size(), kOut) {}
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    int64_t missed = 0;
    for (int32_t id : ids) {
      const int64_t b = layer * n_ff_ + id;
      if (prev_[b] != kOut) {
        Unlink(b);
      } else {
        ++missed;
        if (capacity_ == 0) continue;
        if (size_ == capacity_) Unlink(tail_);
      }
      PushFront(b);
    }
    return missed;
  }

 private:
  static constexpr int64_t kOut = -2, kNone = -1;
  void Unlink(int64_t b) {
    (prev_[b] == kNone ? head_ : next_[prev_[b]]) = next_[b];
    (next_[b] == kNone ? tail_ : prev_[next_[b]]) = prev_[b];
    prev_[b] = next_[b] = kOut;
    --size_;
  }
  void PushFront(int64_t b) {
    prev_[b] = kNone;
    next_[b] = head_;
    (head_ == kNone ? tail_ : prev_[head_]) = b;
    head_ = b;
    ++size_;
  }
  const int64_t n_ff_, capacity_;
  std::vector<int64_t> prev_, next_;
  int64_t head_ = kNone, tail_ = kNone, size_ = 0;
};

class HotAndLruReplay : public ReplayCache {
 public:
  // `ranked[l]`: layer l's neurons, most frequent first (RankByFrequency).
  HotAndLruReplay(const NeuronTrace& trace, size_t record_bytes, int64_t capacity,
                  const std::vector<std::vector<int32_t>>& ranked)
      : trace_(trace),
        record_bytes_(record_bytes),
        capacity_(capacity),
        ranked_(ranked),
        n_ff_(trace.n_ff()),
        hot_(static_cast<size_t>(trace.n_layer() * trace.n_ff()), 0),
        rule_(trace.n_layer(), trace.n_ff(), kConfiguredShare) {
    Split(static_cast<int64_t>(static_cast<double>(capacity) * kConfiguredShare));
    configured_hot_ = hot_;
    configured_lru_slots_ = lru_slots_;
  }
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    cold_.clear();
    for (int32_t id : ids) {
      if (!hot_[layer * n_ff_ + id]) cold_.push_back(id);
    }
    const int64_t missed = lru_->Use(layer, cold_);
    if (rule_.given_away()) {
      ghost_.clear();
      for (int32_t id : ids) {
        if (!configured_hot_[layer * n_ff_ + id]) ghost_.push_back(id);
      }
      rule_.CountGhost(static_cast<int32_t>(layer), ghost_, configured_lru_slots_);
    } else {
      rule_.CountLru(static_cast<int64_t>(cold_.size()),
                     static_cast<int64_t>(cold_.size()) - missed);
    }
    if (const auto share = rule_.EndCall(lru_slots_, lru_->full())) {
      Split(static_cast<int64_t>(static_cast<double>(capacity_) * *share));
    }
    return missed;
  }

 private:
  // `hot_records` of the capacity to the hot segment (split evenly over the layers), the rest
  // to the LRU.
  void Split(int64_t hot_records) {
    const int64_t n_layer = std::max<int64_t>(1, trace_.n_layer());
    const int64_t per_layer = std::min<int64_t>(n_ff_, hot_records / n_layer);
    std::fill(hot_.begin(), hot_.end(), 0);
    for (int64_t l = 0; l < trace_.n_layer(); ++l) {
      for (int64_t k = 0; k < per_layer; ++k) hot_[l * n_ff_ + ranked_[l][k]] = 1;
    }
    lru_slots_ = capacity_ - per_layer * trace_.n_layer();
    lru_ = std::make_unique<TwoQueueReplay>(trace_, record_bytes_,
                                            static_cast<uint64_t>(lru_slots_) * record_bytes_);
  }
  // NeuronStore's share, judged by the same rule (HotLruRule): without it the curve was
  // pessimistic wherever a token's cold neurons outnumber the LRU's slots.
  static constexpr double kConfiguredShare = 0.5;

  const NeuronTrace& trace_;
  const size_t record_bytes_;
  const int64_t capacity_;
  const std::vector<std::vector<int32_t>>& ranked_;
  const int64_t n_ff_;
  std::vector<uint8_t> hot_;
  std::vector<uint8_t> configured_hot_;
  std::vector<int32_t> cold_, ghost_;
  std::unique_ptr<TwoQueueReplay> lru_;
  int64_t lru_slots_ = 0, configured_lru_slots_ = 0;
  HotLruRule rule_;
};

// Each layer's neurons by how often the trace's tokens outside [skip_begin, skip_end) use them,
// most frequent first (the order a converted file gives them), once for every cache size.
std::vector<std::vector<int32_t>> RankByFrequency(const NeuronTrace& trace, int64_t skip_begin,
                                                  int64_t skip_end) {
  std::vector<std::vector<int32_t>> ranked(static_cast<size_t>(trace.n_layer()));
  std::vector<int64_t> count(static_cast<size_t>(trace.n_ff()));
  for (int64_t l = 0; l < trace.n_layer(); ++l) {
    std::fill(count.begin(), count.end(), 0);
    for (int64_t t = 0; t < trace.tokens(); ++t) {
      if (t >= skip_begin && t < skip_end) continue;
      for (int32_t id : trace.Active(t, l)) ++count[id];
    }
    std::vector<int32_t>& order = ranked[l];
    order.resize(count.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return count[a] > count[b]; });
  }
  return ranked;
}

}  // namespace

std::vector<MissCurvePoint> ReplayMissCurve(const NeuronTrace& trace, size_t record_bytes,
                                            std::span<const double> fractions,
                                            int64_t warmup_tokens, ReplayPolicy policy, int folds) {
  std::vector<MissCurvePoint> curve;
  const int64_t bundles = trace.n_layer() * trace.n_ff();
  const int64_t tokens = trace.tokens();
  const bool hot = policy == ReplayPolicy::kHotHalfAndLru;
  const int64_t n_folds = hot ? std::clamp<int64_t>(folds, 1, std::max<int64_t>(1, tokens)) : 1;
  // Fold k replays tokens [bounds[k], bounds[k+1]), its hot half ranked on all the others (on
  // every token when there is one fold).
  std::vector<int64_t> bounds;
  for (int64_t k = 0; k <= n_folds; ++k) bounds.push_back(tokens * k / n_folds);
  std::vector<std::vector<std::vector<int32_t>>> ranked(static_cast<size_t>(n_folds));
  if (hot) {
    for (int64_t k = 0; k < n_folds; ++k) {
      ranked[k] = n_folds == 1 ? RankByFrequency(trace, 0, 0)
                               : RankByFrequency(trace, bounds[k], bounds[k + 1]);
    }
  }
  for (double f : fractions) {
    MissCurvePoint p;
    p.cache_fraction = std::clamp(f, 0.0, 1.0);
    const int64_t capacity = std::llround(p.cache_fraction * static_cast<double>(bundles));
    p.cache_bytes = static_cast<uint64_t>(capacity) * record_bytes;
    int64_t counted_misses = 0, counted_uses = 0, counted_tokens = 0;
    for (int64_t k = 0; k < n_folds; ++k) {
      std::unique_ptr<ReplayCache> cache;
      switch (policy) {
        case ReplayPolicy::kTwoQueueLru:
          cache = std::make_unique<TwoQueueReplay>(trace, record_bytes, p.cache_bytes);
          break;
        case ReplayPolicy::kWindow:
          cache = std::make_unique<WindowReplay>(trace, capacity);
          break;
        case ReplayPolicy::kHotHalfAndLru:
          cache = std::make_unique<HotAndLruReplay>(trace, record_bytes, capacity, ranked[k]);
          break;
      }
      for (int64_t t = bounds[k]; t < bounds[k + 1]; ++t) {
        const bool counted = t - bounds[k] >= warmup_tokens;
        for (int64_t l = 0; l < trace.n_layer(); ++l) {
          const std::span<const int32_t> ids = trace.Active(t, l);
          const int64_t missed = cache->Use(l, ids);
          if (counted) {
            counted_misses += missed;
            counted_uses += static_cast<int64_t>(ids.size());
          }
        }
        if (counted) ++counted_tokens;
      }
    }
    p.miss_rate = counted_uses ? static_cast<double>(counted_misses) / counted_uses : 0.0;
    p.misses_per_token =
        counted_tokens ? static_cast<double>(counted_misses) / counted_tokens : 0.0;
    curve.push_back(p);
  }
  return curve;
}

}  // namespace sparrow
