#include "engine/plan/cost_model.h"

#include <algorithm>
#include <cmath>

namespace sparrow::plan {

double DenseSeconds(const PlanInputs& in, int threads, const PlanLevel& /*level*/) {
  double s = 0;
  for (const TypedBytes& b : in.dense) s += b.bytes / in.hw.DenseRate(b.type, threads);
  return s;
}

double FfnComputeSeconds(const PlanInputs& in, int threads, const PlanLevel& level) {
  double s = 0;
  for (const TypedBytes& b : in.neuron_rows) {
    const double rate =
        level.gather ? in.hw.GatherRate(b.type, threads) : in.hw.DenseRate(b.type, threads);
    s += b.bytes / rate;
  }
  // Rows from the store's slots cost its bookkeeping on top of the kernels (measured with every
  // record in memory, at the profile's thread count).
  if (in.converted) s += in.hw.store_seconds_per_neuron;
  return s * level.active_share * static_cast<double>(in.n_ff);
}

uint64_t ReadBytes(const PlanInputs& in) {
  return (in.record_bytes + kReadAlign - 1) / kReadAlign * kReadAlign;
}

double FlashBytesPerToken(const PlanInputs& in, const CachePoint& cache, const PlanLevel& level) {
  if (!in.converted) return 0;
  return level.active_share * static_cast<double>(in.n_ff * in.n_layer) * cache.miss_rate *
         static_cast<double>(ReadBytes(in));
}

double FlashSeconds(const PlanInputs& in, const CachePoint& cache, const PlanLevel& level) {
  const double bytes = FlashBytesPerToken(in, cache, level) / static_cast<double>(in.n_layer);
  if (bytes <= 0) return 0;
  // A layer hands all its misses to the ring at once, so as many are in flight as it has, up to
  // the store's depth: a layer with few misses reads at the shallow end of the curve.
  const double reads = bytes / static_cast<double>(ReadBytes(in));
  const double depth = std::clamp(reads, 1.0, static_cast<double>(in.io_queue_depth));
  return bytes / in.hw.FlashBytesPerSecond(ReadBytes(in), depth);
}

uint64_t CacheBytes(const PlanInputs& in, const CachePoint& cache) {
  return static_cast<uint64_t>(std::llround(cache.fraction * static_cast<double>(in.bundle_bytes)));
}

uint64_t FixedBytes(const PlanInputs& in) {
  return in.resident_bytes + in.scratch_bytes;
}

TokenCost Evaluate(const PlanInputs& in, int threads, const CachePoint& cache,
                   const PlanLevel& level, uint64_t kv_bytes) {
  TokenCost t;
  const double layers = static_cast<double>(in.n_layer);
  t.dense_s = DenseSeconds(in, threads, level) + in.token_overhead_s;
  t.ffn_compute_s = FfnComputeSeconds(in, threads, level) * layers;
  t.flash_s = FlashSeconds(in, cache, level) * layers;
  // The rows in memory are computed while the misses are read; the missed rows once they have
  // landed (the down accumulation waits for the last of them).
  const double miss_compute_s = in.converted ? t.ffn_compute_s * cache.miss_rate : 0;
  t.token_s = t.dense_s + std::max(t.ffn_compute_s, t.flash_s + miss_compute_s);
  t.flash_bytes = FlashBytesPerToken(in, cache, level);
  t.memory_bytes = FixedBytes(in) + CacheBytes(in, cache) + level.extra_bytes + kv_bytes;
  return t;
}

}  // namespace sparrow::plan
