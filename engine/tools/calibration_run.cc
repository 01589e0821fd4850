#include "engine/tools/calibration_run.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "engine/runtime/kv_cache.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::tools {

Result<std::vector<int32_t>> CalibrationTokens(const Model& model, const std::string& text_file,
                                               int64_t max_tokens) {
  if (max_tokens < 2) {
    return InvalidArgument("--calibrate-tokens must be at least 2, got " +
                           std::to_string(max_tokens));
  }
  SPARROW_ASSIGN_OR_RETURN(auto tokenizer, LoadTokenizer(model.file()));
  std::ifstream in(text_file, std::ios::binary);
  if (!in) return NotFound(text_file + ": cannot read the calibration text");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int32_t> tokens = tokenizer->Tokenize(ss.str(), /*add_special=*/true);
  if (tokens.size() < 2) return InvalidArgument(text_file + ": the calibration text is empty");
  tokens.resize(std::min<size_t>(tokens.size(), static_cast<size_t>(max_tokens)));
  return tokens;
}

Status RunCalibrationWindows(const Model& model, ForwardPass& fp, std::span<const int32_t> tokens) {
  const ModelConfig& c = model.config();
  const int64_t n_ctx = std::min<int64_t>(c.n_ctx_train > 0 ? c.n_ctx_train : 512, 512);
  std::vector<float> logits;
  for (size_t w = 0; w < tokens.size(); w += static_cast<size_t>(n_ctx)) {
    ContiguousKvCache cache(c.n_layer, n_ctx, c.kv_dim());
    const size_t end = std::min(tokens.size(), w + static_cast<size_t>(n_ctx));
    for (size_t t = w; t < end; t += 64) {
      const size_t len = std::min<size_t>(64, end - t);
      SPARROW_RETURN_IF_ERROR(
          fp.Run(tokens.subspan(t, len), static_cast<int64_t>(t - w), cache, false, &logits));
    }
  }
  return Status::Ok();
}

}  // namespace sparrow::tools
