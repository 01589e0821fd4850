#pragma once
// What the neuron store adds to a converted model's decoding when nothing is read from flash:
// the same tokens decoded through a store that holds every record (its default split between
// the hot segment and the LRU's slots), and through the file mapped, the difference per active
// neuron. The planner adds it to the FFN's compute
// (`profile-hw -m CONVERTED`). Not thread-safe (it uses every thread it is given); run alone.
#include <cstdint>
#include <string>

#include "engine/common/result.h"

namespace sparrow::tools {

struct StoreProbeOptions {
  std::string model;  // a converted file (`sparrow convert`)
  int threads = 1;
  int64_t tokens = 64;  // decoded per repetition
  int reps = 5;         // pairs, the median of their differences, after one warm-up pair
  // Larger bundles are not probed: the probe holds every one in memory.
  uint64_t max_bundle_bytes = uint64_t{2} << 30;
};

struct StoreProbeResult {
  double mapped_s_per_token = 0, store_s_per_token = 0;
  double neurons_per_token = 0;   // active ones, every layer
  int64_t n_layer = 0, n_ff = 0;  // the model's
  double seconds_per_neuron = 0;  // (store - mapped) / neurons, at least 0
};

// Errors name the file: not converted, bundles over the limit, a read that failed.
Result<StoreProbeResult> MeasureStoreOverhead(const StoreProbeOptions& options);

}  // namespace sparrow::tools
