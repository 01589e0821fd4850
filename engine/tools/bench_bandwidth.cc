#include "engine/tools/bench_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "engine/kernels/thread_pool.h"

namespace sparrow::tools {
namespace {

// Sums with independent accumulators so the loop is bound by loads, not by an add chain.
uint64_t SumWords(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  for (; i < n; ++i) a0 += p[i];
  return a0 + a1 + a2 + a3;
}

}  // namespace

BandwidthResult MeasureReadBandwidth(int threads, uint64_t buffer_bytes, int reps) {
  BandwidthResult r;
  r.threads = std::max(1, threads);
  r.reps = std::max(1, reps);
  const size_t words = std::max<uint64_t>(buffer_bytes / sizeof(uint64_t), 1);
  r.buffer_bytes = words * sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[words]);
  kernels::ThreadPool pool(r.threads);
  // Slices are many more than threads so a slow thread does not leave the others idle; each
  // thread also first-touches the pages it will read most (NUMA-friendly on big machines).
  const int64_t n_slices = int64_t{r.threads} * 16;
  const size_t slice = (words + n_slices - 1) / n_slices;
  pool.ParallelFor(n_slices, [&](int64_t s, int) {
    const size_t begin = std::min(words, s * slice);
    const size_t end = std::min(words, begin + slice);
    for (size_t i = begin; i < end; ++i) buf[i] = i;
  });
  std::atomic<uint64_t> sink{0};  // an atomic the sums go to, so the reads cannot be elided
  for (int rep = 0; rep < r.reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.ParallelFor(n_slices, [&](int64_t s, int) {
      const size_t begin = std::min(words, s * slice);
      const size_t end = std::min(words, begin + slice);
      sink.fetch_add(SumWords(buf.get() + begin, end - begin), std::memory_order_relaxed);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (seconds > 0) {
      r.best_bytes_per_s = std::max(r.best_bytes_per_s, r.buffer_bytes / seconds);
    }
  }
  return r;
}

}  // namespace sparrow::tools
