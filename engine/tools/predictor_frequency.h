#pragma once
// How often a PowerInfer file's own predictor picks each FFN neuron over a calibration text,
// and how a neuron cache would fare on those choices: what `sparrow convert --calibrate` orders
// such a file's records by (hot neurons first, as a profile's frequencies order a SwiGLU
// model's) and the miss curve it writes into the converted file for the planner.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/sparse/miss_curve.h"

namespace sparrow::tools {

struct PredictorCalibration {
  // Per layer, the neurons in descending order of how many tokens chose them (ties keep file
  // order).
  std::vector<std::vector<int32_t>> orders;
  // The same choices replayed through the store's default policy (a hot half, then the LRU) at
  // cache sizes from 5% to all bundles: each quarter of the tokens replayed with the hot neurons
  // ranked on the other three (text the ranking did not see). The planner's P_miss.
  // Empty when the text gave fewer than 8 tokens.
  std::vector<MissCurvePoint> miss_curve;
  // Belady's optimum at the same sizes and folds: the fewest misses any policy could have.
  std::vector<MissCurvePoint> optimum_curve;
  // Of every layer's neurons, the share the predictor chose per token, on average.
  double active_share = 0;
};

// Runs a PowerInfer file's own predictor over the first `max_tokens` tokens of `text_file`.
// `record_bytes` sizes the replayed cache's slots. Errors name the file.
Result<PredictorCalibration> CalibrateByPredictor(const std::string& model_path,
                                                  const std::string& text_file, int64_t max_tokens,
                                                  int threads, size_t record_bytes = 4096);

}  // namespace sparrow::tools
