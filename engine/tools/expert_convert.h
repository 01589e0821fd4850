#pragma once
// ConvertExpertsToBundles: `sparrow convert` on a mixture-of-experts model: the layout of
// engine/model/expert_bundles.h (resident tensors first, then per layer one record per expert,
// hot experts first by the routing a calibration text measured).
#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/tools/bundle_convert.h"

namespace sparrow::tools {

// `model` is o.model loaded, with experts.
Result<ConvertSummary> ConvertExpertsToBundles(const ConvertOptions& o, const Model& model);

}  // namespace sparrow::tools
