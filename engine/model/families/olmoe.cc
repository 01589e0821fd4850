// OLMoE: RMSNorm over the whole q and k rows before RoPE (not per head), NeoX RoPE, experts of
// feed_forward_length neurons whose top-k softmax weights are used as they are.
#include "engine/model/families/experts.h"
#include "engine/model/families/families.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

Status ReadOlmoeHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  return ReadExperts(f, p, /*norm_weights=*/false, c.n_ff, c);
}

}  // namespace

const ArchSpec kOlmoe{.name = "olmoe",
                      .rope_style = RopeStyle::kNeox,
                      .qk_norm = true,
                      .qk_norm_whole = true,
                      .experts = true,
                      .read_hparams = ReadOlmoeHparams};

}  // namespace sparrow::families
