// Phi-3 / Phi-3.5 / Phi-4-mini: fused attn_qkv, ffn_up holding gate and up, partial rotary NeoX
// RoPE with LongRoPE's per-dimension factors (rope_factors_long / _short, chosen by context)
// and their attention factor, q scaled before the scores. Its sliding window is ignored, as
// llama.cpp does (the converters wrote wrong values).
#include <cmath>

#include "engine/model/families/families.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

Status ReadPhi3Hparams(const GgufFile&, const std::string&, ModelConfig& c) {
  c.q_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  c.rope_long_factors = c.n_ctx_train > c.rope_n_ctx_orig;
  return Status::Ok();
}

}  // namespace

const ArchSpec kPhi3{.name = "phi3",
                     .rope_style = RopeStyle::kNeox,
                     .fused_gate_up = true,
                     .read_hparams = ReadPhi3Hparams};

}  // namespace sparrow::families
