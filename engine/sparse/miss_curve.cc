#include "engine/sparse/miss_curve.h"

#include <algorithm>
#include <cmath>

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

std::vector<MissCurvePoint> ReplayMissCurve(const NeuronTrace& trace, size_t record_bytes,
                                            std::span<const double> fractions,
                                            int64_t warmup_tokens) {
  std::vector<MissCurvePoint> curve;
  const int64_t bundles = trace.n_layer() * trace.n_ff();
  std::vector<uint8_t*> records;
  std::vector<int32_t> misses;
  for (double f : fractions) {
    MissCurvePoint p;
    p.cache_fraction = std::clamp(f, 0.0, 1.0);
    p.cache_bytes = static_cast<uint64_t>(std::llround(p.cache_fraction * bundles)) * record_bytes;
    // Slots are never written here, so the cache's mapping costs address space, not memory.
    NeuronCache cache(trace.n_layer(), trace.n_ff(), record_bytes, p.cache_bytes);
    int64_t counted_misses = 0, counted_uses = 0, counted_tokens = 0;
    for (int64_t t = 0; t < trace.tokens(); ++t) {
      for (int64_t l = 0; l < trace.n_layer(); ++l) {
        const std::span<const int32_t> ids = trace.Active(t, l);
        records.resize(ids.size());
        misses.clear();
        cache.Acquire(static_cast<int32_t>(l), ids, records.data(), &misses);
        // A bypassed bundle (no slot) is read too: a miss.
        int64_t missed = static_cast<int64_t>(misses.size());
        for (uint8_t* r : records) missed += r == nullptr;
        cache.Release(static_cast<int32_t>(l), ids, records);
        if (t >= warmup_tokens) {
          counted_misses += missed;
          counted_uses += static_cast<int64_t>(ids.size());
        }
      }
      if (t >= warmup_tokens) ++counted_tokens;
    }
    p.miss_rate = counted_uses ? static_cast<double>(counted_misses) / counted_uses : 0.0;
    p.misses_per_token =
        counted_tokens ? static_cast<double>(counted_misses) / counted_tokens : 0.0;
    curve.push_back(p);
  }
  return curve;
}

}  // namespace sparrow
