#pragma once
// How often a PowerInfer file's own predictor picks each FFN neuron over a calibration text:
// what `sparrow convert --calibrate` orders such a file's records by (hot neurons first), as a
// profile's frequencies order a SwiGLU model's.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::tools {

// Per layer, the neurons in descending order of how many of the first `max_tokens` tokens of
// `text_file` chose them (ties keep file order). Errors name the file.
Result<std::vector<std::vector<int32_t>>> OrderByPredictorChoices(const std::string& model_path,
                                                                  const std::string& text_file,
                                                                  int64_t max_tokens, int threads);

}  // namespace sparrow::tools
