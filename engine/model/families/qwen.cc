// Qwen2 (q/k/v bias), Qwen3 (per-head RMSNorm of q and k instead), Qwen3-MoE (Qwen3's attention,
// experts with renormalised top-k weights). NeoX RoPE throughout.
#include "engine/model/families/experts.h"
#include "engine/model/families/families.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

Status ReadQwen3MoeHparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  SPARROW_RETURN_IF_ERROR(ReadExperts(f, p, /*norm_weights=*/true, 0, c));
  // Without expert_feed_forward_length, llama.cpp splits feed_forward_length among the experts.
  if (!f.Find(p + "expert_feed_forward_length")) c.n_ff_exp = c.n_ff / c.n_expert_used;
  if (c.n_ff_exp == 0) return Corrupt(p + "expert_feed_forward_length is missing");
  return Status::Ok();
}

}  // namespace

const ArchSpec kQwen2{.name = "qwen2", .rope_style = RopeStyle::kNeox, .attn_qkv_bias = true};
const ArchSpec kQwen3{
    .name = "qwen3", .rope_style = RopeStyle::kNeox, .qk_norm = true, .rank_last_softmax = true};
const ArchSpec kQwen3Moe{.name = "qwen3moe",
                         .rope_style = RopeStyle::kNeox,
                         .qk_norm = true,
                         .experts = true,
                         .read_hparams = ReadQwen3MoeHparams};

}  // namespace sparrow::families
