// SmolLM3: llama's layer with RoPE left out of every fourth layer. SmallThinker: experts whose
// router reads the layer's input (before the attention norm, so routing can start early),
// sigmoid or softmax gating, ReLU-gated experts; with a sliding window, the first layer of each
// period is global and has no RoPE.
#include "engine/model/families/experts.h"
#include "engine/model/families/families.h"
#include "engine/model/gguf_file.h"
#include "engine/model/hparam_reader.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

Status ReadSmollm3Hparams(const GgufFile&, const std::string&, ModelConfig& c) {
  c.no_rope_layers.assign(c.n_layer, 0);
  for (int64_t il = 0; il < c.n_layer; ++il) c.no_rope_layers[il] = (il + 1) % 4 == 0 ? 1 : 0;
  return Status::Ok();
}

Status ReadSmallthinkerHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  SPARROW_RETURN_IF_ERROR(ReadExperts(f, p, /*norm_weights=*/true, 0, c));
  if (!f.Find(p + "expert_feed_forward_length"))
    return NotFound("metadata key '" + p + "expert_feed_forward_length' is missing");
  SPARROW_ASSIGN_OR_RETURN(uint64_t gating, f.GetUIntOr(p + "expert_gating_func", 1));
  if (gating != 1 && gating != 2) {
    return Unsupported(p + "expert_gating_func " + std::to_string(gating) +
                       " (supported: 1 softmax, 2 sigmoid)");
  }
  c.expert_gating =
      gating == 2 ? ModelConfig::ExpertGating::kSigmoid : ModelConfig::ExpertGating::kSoftmax;
  SPARROW_ASSIGN_OR_RETURN(uint64_t swa, f.GetUIntOr(p + "attention.sliding_window", 0));
  if (swa > 0) {
    // llama.cpp fixes the window at 4096 whatever the key says; layers 0, period, 2 period...
    // are global and rotate nothing.
    c.n_swa = 4096;
    SPARROW_ASSIGN_OR_RETURN(int64_t period,
                             ReadCountOr(f, p + "attention.sliding_window_pattern", 4, 4096));
    SPARROW_ASSIGN_OR_RETURN(c.rope_freq_base_swa,
                             ReadFloatOr(f, p + "rope.freq_base_swa", c.rope_freq_base, 1, 1e12));
    c.rope_freq_scale_swa = c.rope_freq_scale;
    c.swa_layers.assign(c.n_layer, 0);
    c.no_rope_layers.assign(c.n_layer, 0);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      c.swa_layers[il] = il % period != 0 ? 1 : 0;
      c.no_rope_layers[il] = il % 4 == 0 ? 1 : 0;
    }
  }
  return Status::Ok();
}

}  // namespace

const ArchSpec kSmollm3{.name = "smollm3", .read_hparams = ReadSmollm3Hparams};
const ArchSpec kSmallthinker{.name = "smallthinker",
                             .rope_style = RopeStyle::kNeox,
                             .ffn = FfnKind::kReluGlu,
                             .experts = true,
                             .router_on_layer_input = true,
                             .read_hparams = ReadSmallthinkerHparams};

}  // namespace sparrow::families
