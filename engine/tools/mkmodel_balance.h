#pragma once
// Routers that share the load, for synthetic mixture-of-experts files: a random-weight model's
// hidden states keep a common direction across tokens, which random router rows turn into a
// fixed preference (the hottest 10% of experts took 65-84% of the routings in bench/RESULTS.md),
// far from a trained model, whose load-balancing loss spreads its experts' use. BalanceRouters
// runs the model over a text, takes each layer's mean router input and removes that direction
// from every router row, so no expert is preferred for what all tokens share; the file is
// rewritten in place (routers are F32). Layers are balanced one after another, each measured
// with the layers before it already balanced.
#include <cstdint>
#include <string>

#include "engine/common/result.h"

namespace sparrow::tools {

struct RouterBalance {
  // Share of the routings the hottest 10% of experts took, mean over layers, before and after.
  double hot10_before = 0, hot10_after = 0;
};

// `path`: an MoE file with F32 routers (as `sparrow mkmodel` writes them). Errors name the file.
Result<RouterBalance> BalanceRouters(const std::string& path, const std::string& text_file,
                                     int64_t max_tokens, int threads);

}  // namespace sparrow::tools
