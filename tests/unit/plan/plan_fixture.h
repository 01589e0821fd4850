#pragma once
// Hand-checkable planner inputs shared by the plan tests: every rate a round number, so the time
// and memory of each choice can be worked out on paper (the arithmetic is in the comments).
#include "engine/plan/plan_inputs.h"

namespace sparrow::plan::testing {

constexpr double kMiBytes = 1024.0 * 1024.0;

// Two thread counts: q4_0 at 1 GB/s with one thread and 2 GB/s with two (whole matrices and
// gathered rows alike); flash at 1 GB/s for 4 KiB reads at depth 1.
inline HardwareProfile TwoThreadHardware() {
  HardwareProfile hw;
  hw.max_threads = 2;
  hw.kernels.push_back({TensorType::kQ4_0, {1e9, 2e9}, {1e9, 2e9}});
  hw.memory_bytes_per_s = {10e9, 10e9};
  hw.flash.push_back({4096, 1, 1e9 / kMiBytes});
  return hw;
}

// One layer of 1000 neurons, converted, records of 4096 bytes (1000 bytes of rows each); 1 MB
// read whole per token; 10 MB resident, 1 MB scratch; one level (half the neurons active).
//   D(t)    = 1e6 / rate(t)                      = 1 ms (t = 1), 0.5 ms (t = 2)
//   C(t)    = 500 neurons * 1000 B / rate(t)     = 0.5 ms, 0.25 ms
//   F(c)    = 500 * miss(c) * 4096 B / 1 GB/s    = 2.048 ms (no cache), 0.4096 ms (half), 0 (all)
//   T       = D + max(C, F + miss * C): two threads 0.75 ms (all), 0.9596 ms (half: 0.5 +
//             0.4096 + 0.2 * 0.25), 2.798 ms (none); one thread 1.5 ms (all), 1.5096 ms (half)
//   memory  = 11 MB + cache(c) + KV; cache(c)    = 0, 2,048,000 B, 4,096,000 B
inline PlanInputs HandInputs() {
  PlanInputs in;
  in.model_name = "hand";
  in.converted = true;
  in.n_layer = 1;
  in.n_ff = 1000;
  in.n_embd = 64;
  in.dense = {{TensorType::kQ4_0, 1000000}};
  in.neuron_rows = {{TensorType::kQ4_0, 1000}};
  in.record_bytes = 4096;
  in.bundle_bytes = 1000 * 4096;
  in.resident_bytes = 10000000;
  in.scratch_bytes = 1000000;
  in.kv_bytes_per_token = 1000;
  in.n_ctx = 2000;
  in.io_queue_depth = 1;
  in.levels = {{0.5, 0.5, true, 0}};
  in.cache = {{0.0, 1.0}, {0.5, 0.2}, {1.0, 0.0}};
  in.hw = TwoThreadHardware();
  return in;
}

}  // namespace sparrow::plan::testing
