#pragma once
// ConvertToBundles: the work of `sparrow convert`: rewrites a model (GGUF or PowerInfer's PWRI)
// in the sparse layout of engine/model/neuron_bundles.h: resident tensors first, then per layer
// one record per FFN neuron, hot neurons first by a profile's activation frequencies. The output
// appears only when complete (GgufFileWriter's PATH.partial and rename).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/sparse/miss_curve.h"

namespace sparrow::tools {

struct ConvertOptions {
  std::string model;
  std::string output;
  std::string profile;     // optional: neurons ordered by its activation frequencies
  double hot_level = 0.5;  // the profile level whose frequencies order the neurons
  // PowerInfer files (which take no profile): neurons ordered by how often the file's own
  // predictor picks them over this text's first calibrate_tokens tokens.
  std::string calibrate;
  int64_t calibrate_tokens = 512;
  int threads = 0;  // for --calibrate (0: all cores)
  uint32_t io_block = 4096;
  bool progress = false;  // \r progress on stderr
  // MoE files whose experts are ReGLU (SmallThinker): neuron bundles inside each expert
  // (expert_bundles.h), its down matrix as rows of ExpertDownRowsType.
  bool expert_neurons = false;
  // Tests: the neuron order of a layer (record k holds neuron order[k]) instead of the
  // profile's; must return a permutation of 0..n_ff-1 (of 0..n_expert-1 for an MoE model).
  std::function<std::vector<int32_t>(int64_t layer, int64_t n_ff)> order;
};

struct ConvertSummary {
  uint64_t resident_bytes = 0;  // tensors outside the bundles
  uint64_t bundle_bytes = 0;    // all layers' records
  uint64_t record_bytes = 0;    // of layer 0's records
  uint64_t row_bytes = 0;       // of layer 0's rows in a record, before padding
  int64_t n_layer = 0;
  int64_t n_ff = 0;      // neurons per layer, or per expert
  int64_t n_expert = 0;  // records are experts (expert_bundles.h) when > 0
  bool gate_in_bundle = false;
  bool expert_neuron_bundles = false;  // expert records hold neuron bundles
  bool ordered_by_profile = false;
  // --calibrate: the miss curve written into the file (the planner's P_miss); else empty.
  std::vector<MissCurvePoint> miss_curve;
  // --calibrate: Belady's optimum at the same sizes on the same text (the bound; not written).
  std::vector<MissCurvePoint> optimum_curve;
  double active_share = 0;  // --calibrate: the share of neurons the predictor chose per token
  // --calibrate on an MoE model: (share of the experts, share of the routings the most popular
  // of them took), averaged over layers.
  std::vector<std::pair<double, double>> expert_coverage;
};

Result<ConvertSummary> ConvertToBundles(const ConvertOptions& options);

}  // namespace sparrow::tools
