#include "engine/sparse/miss_curve.h"

#include <algorithm>
#include <cmath>

#include "engine/sparse/neuron_cache.h"

namespace sparrow {

void NeuronTrace::Append(std::span<const int32_t> active) {
  ids_.insert(ids_.end(), active.begin(), active.end());
  offsets_.push_back(static_cast<int64_t>(ids_.size()));
}

std::span<const int32_t> NeuronTrace::Active(int64_t token, int64_t layer) const {
  const size_t i = static_cast<size_t>(token * n_layer_ + layer);
  return {ids_.data() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
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
