#pragma once
// HardwareProfile: what `sparrow profile-hw` measured of this device, once, for the planner
// (PowerInfer-2 section 5.2's hardware inputs): how fast the engine's own kernels stream weights
// at each thread count, the memory read bandwidth, and flash read throughput by block size and
// queue depth. A plain value; the YAML reader and writer are below. Thread-compatible.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"

namespace sparrow::plan {

// One weight type's matrix-vector throughput, in bytes of weights per second, at 1..N threads.
struct KernelRate {
  TensorType type = TensorType::kQ4_0;
  std::vector<double> dense_bytes_per_s;   // [threads - 1]: MatMul of one token, whole matrix
  std::vector<double> gather_bytes_per_s;  // [threads - 1]: scattered rows (the sparse FFN)
};

// Flash reads of `block_bytes` with `queue_depth` in flight (bench_io.h's probe).
struct FlashRate {
  uint64_t block_bytes = 0;
  int queue_depth = 1;
  double mib_per_s = 0;
};

struct HardwareProfile {
  int max_threads = 1;  // thread counts measured: 1..max_threads
  std::vector<KernelRate> kernels;
  std::vector<double> memory_bytes_per_s;  // [threads - 1]: read bandwidth
  std::vector<FlashRate> flash;            // empty: flash not measured
  std::string flash_file;                  // what the flash probe read (for the reader's note)
  // What the neuron store adds per active neuron when every record is in memory (lookups,
  // arrival bookkeeping, rows read from scattered slots), measured on `store_model` against the
  // same model mapped; 0: not measured.
  double store_seconds_per_neuron = 0;
  std::string store_model;
  // Per token, what `store_model` mapped took beyond what the rates above predict for it
  // (attention's arithmetic, norms, sampling, handing work to the threads), at max_threads: the
  // planner adds it for that model. 0: not measured.
  double store_token_overhead_seconds = 0;

  // The kernel table of `type`, or of the closest measured type (same bytes per weight first)
  // when that one was not measured; null when none was.
  const KernelRate* Kernel(TensorType type) const;
  // Bytes of weights per second of `type` at `threads` (clamped to 1..max_threads).
  double DenseRate(TensorType type, int threads) const;
  double GatherRate(TensorType type, int threads) const;
  // Flash bytes per second reading blocks of `block_bytes` with `queue_depth` in flight:
  // interpolated in log(depth) between the measured depths and in log(block size) between the
  // measured sizes (clamped at the ends). 0 when flash was not measured.
  double FlashBytesPerSecond(uint64_t block_bytes, double queue_depth) const;
};

// Checks the tables' sizes and values (positive, finite, one entry per thread count). `where`
// prefixes the messages (a file name).
Status ValidateHardwareProfile(const HardwareProfile& hw, const std::string& where);

// YAML, keys as in WriteHardwareProfile's output; errors name the file and the key.
Result<HardwareProfile> ReadHardwareProfile(const std::string& path);
Result<HardwareProfile> ParseHardwareProfile(const std::string& yaml, const std::string& where);
std::string HardwareProfileToYaml(const HardwareProfile& hw);
Status WriteHardwareProfile(const HardwareProfile& hw, const std::string& path);

// $XDG_CACHE_HOME/sparrow/hw.yaml, else $HOME/.cache/sparrow/hw.yaml; empty if neither is set.
std::string DefaultHardwareProfilePath();

}  // namespace sparrow::plan
