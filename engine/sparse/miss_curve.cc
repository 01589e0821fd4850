#include "engine/sparse/miss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <utility>

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

// Belady's MIN with bypass over the accesses of tokens [first, end), in the order the replay
// makes them (token by token, layer by layer).
class OptimumReplay : public ReplayCache {
 public:
  OptimumReplay(const NeuronTrace& trace, int64_t first, int64_t end, int64_t capacity)
      : n_ff_(trace.n_ff()),
        capacity_(capacity),
        held_(static_cast<size_t>(trace.n_layer() * trace.n_ff()), 0),
        held_next_(held_.size(), kNever) {
    std::vector<int64_t> keys;
    for (int64_t t = first; t < end; ++t) {
      for (int64_t l = 0; l < trace.n_layer(); ++l) {
        for (int32_t id : trace.Active(t, l)) keys.push_back(l * n_ff_ + id);
      }
    }
    next_.assign(keys.size(), kNever);
    std::vector<int64_t> seen(held_.size(), kNever);
    for (int64_t i = static_cast<int64_t>(keys.size()) - 1; i >= 0; --i) {
      next_[i] = seen[keys[i]];
      seen[keys[i]] = i;
    }
  }
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    int64_t missed = 0;
    for (int32_t id : ids) {
      const int64_t b = layer * n_ff_ + id;
      const int64_t next = next_[pos_++];
      if (held_[b]) {
        Hold(b, next);
        continue;
      }
      ++missed;
      if (size_ == capacity_) {
        // The held bundle used last (the heap's entries for bundles since used are stale).
        while (!far_.empty() &&
               (!held_[far_.top().second] || held_next_[far_.top().second] != far_.top().first)) {
          far_.pop();
        }
        if (far_.empty() || far_.top().first <= next) continue;  // read and dropped
        held_[far_.top().second] = 0;
        far_.pop();
        --size_;
      }
      held_[b] = 1;
      ++size_;
      Hold(b, next);
    }
    return missed;
  }

 private:
  static constexpr int64_t kNever = INT64_MAX;
  void Hold(int64_t b, int64_t next) {
    held_next_[b] = next;
    far_.emplace(next, b);
  }
  const int64_t n_ff_, capacity_;
  std::vector<int64_t> next_;  // per access: the index of the same bundle's next one
  std::vector<uint8_t> held_;
  std::vector<int64_t> held_next_;
  std::priority_queue<std::pair<int64_t, int64_t>> far_;  // (next use, bundle), farthest on top
  int64_t pos_ = 0, size_ = 0;
};

// Frequency with decay, and a bypass for bundles less frequent than the least held one.
class DecayedLfuReplay : public ReplayCache {
 public:
  DecayedLfuReplay(const NeuronTrace& trace, int64_t capacity)
      : n_ff_(trace.n_ff()),
        capacity_(capacity),
        score_(static_cast<size_t>(trace.n_layer() * trace.n_ff()), 0),
        held_(score_.size(), 0) {}
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    // A new token starts at layer 0: later uses weigh more, which is the older ones fading.
    if (layer == 0) {
      weight_ *= kGrowth;
      if (weight_ > 1e100) Rescale();
    }
    int64_t missed = 0;
    for (int32_t id : ids) {
      const int64_t b = layer * n_ff_ + id;
      score_[b] += weight_;
      if (held_[b]) {
        low_.emplace(score_[b], b);
        continue;
      }
      ++missed;
      if (capacity_ == 0) continue;
      if (size_ == capacity_) {
        while (!low_.empty() &&
               (!held_[low_.top().second] || score_[low_.top().second] != low_.top().first)) {
          low_.pop();
        }
        if (low_.empty() || low_.top().first >= score_[b]) continue;  // read and dropped
        held_[low_.top().second] = 0;
        low_.pop();
        --size_;
      }
      held_[b] = 1;
      ++size_;
      low_.emplace(score_[b], b);
    }
    // Stale entries (bundles since used or dropped) are cleared out now and then.
    if (low_.size() > static_cast<size_t>(4 * size_ + 4096)) Rebuild();
    return missed;
  }

 private:
  // Half the weight every 64 tokens.
  static constexpr double kGrowth = 1.0108892860517005;  // 2^(1/64)
  void Rescale() {
    for (double& s : score_) s /= weight_;
    weight_ = 1;
    Rebuild();
  }
  void Rebuild() {
    decltype(low_) fresh;
    for (size_t b = 0; b < held_.size(); ++b) {
      if (held_[b]) fresh.emplace(score_[b], static_cast<int64_t>(b));
    }
    low_.swap(fresh);
  }
  using Entry = std::pair<double, int64_t>;
  const int64_t n_ff_, capacity_;
  std::vector<double> score_;
  std::vector<uint8_t> held_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> low_;  // lowest on top
  double weight_ = 1;
  int64_t size_ = 0;
};

// The `capacity` bundles the tokens outside [skip_begin, skip_end) use most, held for good.
class GlobalHotReplay : public ReplayCache {
 public:
  GlobalHotReplay(const NeuronTrace& trace, int64_t capacity, int64_t skip_begin, int64_t skip_end)
      : n_ff_(trace.n_ff()), held_(static_cast<size_t>(trace.n_layer() * trace.n_ff()), 0) {
    std::vector<int64_t> count(held_.size(), 0);
    for (int64_t t = 0; t < trace.tokens(); ++t) {
      if (t >= skip_begin && t < skip_end) continue;
      for (int64_t l = 0; l < trace.n_layer(); ++l) {
        for (int32_t id : trace.Active(t, l)) ++count[l * n_ff_ + id];
      }
    }
    std::vector<int64_t> order(held_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    const auto keep = std::min<size_t>(static_cast<size_t>(capacity), order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      [&](int64_t a, int64_t b) {
                        return count[a] > count[b] || (count[a] == count[b] && a < b);
                      });
    for (size_t i = 0; i < keep; ++i) held_[order[i]] = 1;
  }
  int64_t Use(int64_t layer, std::span<const int32_t> ids) override {
    int64_t missed = 0;
    for (int32_t id : ids) missed += !held_[layer * n_ff_ + id];
    return missed;
  }

 private:
  const int64_t n_ff_;
  std::vector<uint8_t> held_;
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
  const int64_t n_folds = std::clamp<int64_t>(folds, 1, std::max<int64_t>(1, tokens));
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
        case ReplayPolicy::kOptimum:
          cache = std::make_unique<OptimumReplay>(trace, bounds[k], bounds[k + 1], capacity);
          break;
        case ReplayPolicy::kDecayedLfu:
          cache = std::make_unique<DecayedLfuReplay>(trace, capacity);
          break;
        case ReplayPolicy::kGlobalHot:
          // One fold: ranked on every token; else on the other folds.
          cache = n_folds == 1 ? std::make_unique<GlobalHotReplay>(trace, capacity, 0, 0)
                               : std::make_unique<GlobalHotReplay>(trace, capacity, bounds[k],
                                                                   bounds[k + 1]);
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
