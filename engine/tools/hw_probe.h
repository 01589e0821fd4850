#pragma once
// The measurements behind `sparrow profile-hw`: the engine's own kernels (MatMul of one token
// over a matrix larger than the caches, and the sparse FFN's row-pointer products and
// accumulations over a scattered quarter of its rows) at each thread count, the memory read
// bandwidth (bench_bandwidth.h), and flash reads by block size and depth (bench_io.h). A few
// seconds with the defaults. Not thread-safe (it uses every thread it is given); run alone.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"
#include "engine/plan/hardware_profile.h"

namespace sparrow::tools {

struct HwProbeOptions {
  int max_threads = 0;  // 0: every hardware thread
  std::vector<TensorType> types = {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kF16,
                                   TensorType::kF32};
  // Per type: far beyond the last-level cache (a 7B model streams its weights from memory; a model
  // that fits in the caches runs faster than these rates say).
  uint64_t matrix_bytes = uint64_t{256} << 20;
  int reps = 5;  // best of
  uint64_t bandwidth_bytes = uint64_t{256} << 20;
  int bandwidth_reps = 3;
  std::string flash_file;  // empty: flash is not measured
  std::vector<uint64_t> block_bytes = {4096, 8192, 16384, 65536, 262144, 1048576};
  std::vector<int> queue_depths = {1, 8, 32, 128};
  uint64_t flash_bytes_per_size = uint64_t{16} << 20;
};

// Errors name the flash file (or the type that has no kernel).
Result<plan::HardwareProfile> MeasureHardware(const HwProbeOptions& options);

}  // namespace sparrow::tools
