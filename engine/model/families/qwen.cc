// Qwen2 (q/k/v bias), Qwen3 (per-head RMSNorm of q and k instead), Qwen3-MoE (Qwen3's attention,
// experts with renormalised top-k weights). NeoX RoPE throughout.
#include "engine/model/families/experts.h"
#include "engine/model/families/families.h"

namespace sparrow::families {
namespace {

Status ReadQwen3MoeHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  return ReadExperts(f, p, /*norm_weights=*/true, c);
}

}  // namespace

const ArchSpec kQwen2{.name = "qwen2", .rope_style = RopeStyle::kNeox, .attn_qkv_bias = true};
const ArchSpec kQwen3{.name = "qwen3", .rope_style = RopeStyle::kNeox, .qk_norm = true};
const ArchSpec kQwen3Moe{.name = "qwen3moe",
                         .rope_style = RopeStyle::kNeox,
                         .qk_norm = true,
                         .experts = true,
                         .read_hparams = ReadQwen3MoeHparams};

}  // namespace sparrow::families
