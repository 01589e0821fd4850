#pragma once
// The hyper-parameters every mixture-of-experts family shares.
#include <cstdint>
#include <string>

#include "engine/common/status.h"

namespace sparrow {
class GgufFile;
struct ModelConfig;
}  // namespace sparrow

namespace sparrow::families {

// expert_count, expert_used_count (1..count) and expert_feed_forward_length (default
// `default_n_ff_exp`: each family has its own); `norm_weights`: the chosen experts' router
// weights are renormalised.
Status ReadExperts(const GgufFile& f, const std::string& prefix, bool norm_weights,
                   int64_t default_n_ff_exp, ModelConfig& c);

}  // namespace sparrow::families
