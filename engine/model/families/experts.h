#pragma once
// The hyper-parameters every mixture-of-experts family shares.
#include <string>

#include "engine/common/status.h"

namespace sparrow {
class GgufFile;
struct ModelConfig;
}  // namespace sparrow

namespace sparrow::families {

// expert_count, expert_used_count (1..count) and expert_feed_forward_length (default n_ff /
// expert_used_count); `norm_weights`: the chosen experts' router weights are renormalised.
Status ReadExperts(const GgufFile& f, const std::string& prefix, bool norm_weights, ModelConfig& c);

}  // namespace sparrow::families
