#pragma once
// A STREAM-like memory read probe: the best rate at which `threads` threads can sum a buffer
// much larger than the caches. It bounds how fast token generation, which streams every
// weight once per token, can possibly go. Thread-safe (each call owns its buffer and threads).
#include <cstddef>
#include <cstdint>

namespace sparrow::tools {

struct BandwidthResult {
  int threads = 0;
  uint64_t buffer_bytes = 0;
  int reps = 0;
  double best_bytes_per_s = 0;
};

// Reads a `buffer_bytes` buffer `reps` times with `threads` threads; reports the best pass.
BandwidthResult MeasureReadBandwidth(int threads, uint64_t buffer_bytes, int reps);

}  // namespace sparrow::tools
