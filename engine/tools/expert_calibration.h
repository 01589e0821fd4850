#pragma once
// How often a mixture-of-experts model's router picks each expert over a calibration text, and
// how an expert cache would fare on those choices: what `sparrow convert --calibrate` orders an
// MoE file's expert records by (hot experts first) and the miss curve it writes for the planner.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/sparse/miss_curve.h"

namespace sparrow::tools {

struct ExpertCalibration {
  // Per layer, the experts in descending order of how many tokens chose them (ties keep file
  // order).
  std::vector<std::vector<int32_t>> orders;
  // Per layer, each expert's share of the tokens that chose it (file numbering).
  std::vector<std::vector<double>> frequency;
  // The choices replayed through the store's default policy (hot half, then the LRU) at cache
  // sizes from 5% to all experts, each half of the text ranked on the other. Empty when the text
  // gave fewer than 8 tokens.
  std::vector<MissCurvePoint> miss_curve;
  int64_t tokens = 0;
};

// Of the routings counted per layer and expert, the share each layer's most chosen `share` of
// its experts took (at least one expert), averaged over layers.
double HottestExpertShare(const std::vector<std::vector<double>>& counts, double share);

// Runs the model over the first `max_tokens` tokens of `text_file` and records its routing.
// `record_bytes` sizes the replayed cache's slots (one expert). Errors name the file.
Result<ExpertCalibration> CalibrateExperts(const std::string& model_path,
                                           const std::string& text_file, int64_t max_tokens,
                                           int threads, size_t record_bytes);

}  // namespace sparrow::tools
