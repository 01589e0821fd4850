#pragma once
// Running a model over a calibration text, as `sparrow convert --calibrate` does to learn which
// neurons (PowerInfer files) or experts (mixture-of-experts files) the model uses most.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"

namespace sparrow::tools {

// The first `max_tokens` (at least 2) tokens of `text_file` in `model`'s vocabulary. Errors name
// the file or the flag.
Result<std::vector<int32_t>> CalibrationTokens(const Model& model, const std::string& text_file,
                                               int64_t max_tokens);

// Runs `tokens` through `fp` in windows of the model's context (512 at most), each a fresh
// sequence, 64 tokens per call: its FFN's observer sees every token.
Status RunCalibrationWindows(const Model& model, ForwardPass& fp, std::span<const int32_t> tokens);

}  // namespace sparrow::tools
