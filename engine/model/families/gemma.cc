// Gemma 2 and 3: GeGLU, embeddings scaled by sqrt(n_embd), a norm after attention and after the
// FFN as well as before, and sliding-window layers with their own RoPE base. Gemma 2 soft-caps
// attention scores and logits; Gemma 3 normalises q and k per head instead. The norms' "1 + w"
// is folded into the weights by the GGUF converter, so they are plain RMSNorms here.
#include <cmath>

#include "engine/model/families/families.h"
#include "engine/model/gguf_file.h"
#include "engine/model/hparam_reader.h"
#include "engine/model/model_config.h"

namespace sparrow::families {
namespace {

// Layer il slides unless it is the last of each `period` (a period of 1: every layer slides).
void SetSwaPattern(int64_t period, ModelConfig& c) {
  c.swa_layers.assign(c.n_layer, 0);
  for (int64_t il = 0; il < c.n_layer; ++il) c.swa_layers[il] = il % period < period - 1 ? 1 : 0;
  if (period == 1) c.swa_layers.assign(c.n_layer, 1);
}

// Gemma's query_pre_attn_scalar: head_dim, except for the 27B models (62 or 46 layers).
float GemmaQueryScale(const ModelConfig& c, int64_t n_layer_27b) {
  const int64_t d = c.n_layer == n_layer_27b ? c.n_embd / c.n_head : c.head_dim;
  return 1.0f / std::sqrt(static_cast<float>(d));
}

Status ReadGemma2Hparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  SPARROW_ASSIGN_OR_RETURN(c.n_swa,
                           ReadCountOr(f, p + "attention.sliding_window", 4096, int64_t{1} << 24));
  SPARROW_ASSIGN_OR_RETURN(int64_t period,
                           ReadCountOr(f, p + "attention.sliding_window_pattern", 2, 4096));
  SetSwaPattern(period, c);
  SPARROW_ASSIGN_OR_RETURN(c.rope_freq_base_swa,
                           ReadFloatOr(f, p + "rope.freq_base_swa", c.rope_freq_base, 1, 1e12));
  c.rope_freq_scale_swa = c.rope_freq_scale;
  SPARROW_ASSIGN_OR_RETURN(c.attn_softcap,
                           ReadFloatOr(f, p + "attn_logit_softcapping", 50.0, 0, 1e6));
  SPARROW_ASSIGN_OR_RETURN(c.final_softcap,
                           ReadFloatOr(f, p + "final_logit_softcapping", 30.0, 0, 1e6));
  c.q_scale = GemmaQueryScale(c, 46);
  return Status::Ok();
}

Status ReadGemma3Hparams(const GgufFile& f, const std::string& p, ModelConfig& c) {
  SPARROW_ASSIGN_OR_RETURN(uint64_t swa, f.GetUIntOr(p + "attention.sliding_window", 0));
  if (swa > 0) {
    c.n_swa = static_cast<int64_t>(swa);
    SPARROW_ASSIGN_OR_RETURN(int64_t period,
                             ReadCountOr(f, p + "attention.sliding_window_pattern", 6, 4096));
    SetSwaPattern(period, c);
    SPARROW_ASSIGN_OR_RETURN(c.rope_freq_base_swa,
                             ReadFloatOr(f, p + "rope.freq_base_swa", 10000.0, 1, 1e12));
    c.rope_freq_scale_swa = 1.0f;
  }
  if (f.Find(p + "final_logit_softcapping")) {
    SPARROW_ASSIGN_OR_RETURN(c.final_softcap,
                             ReadFloatOr(f, p + "final_logit_softcapping", 0, 0, 1e6));
  }
  c.q_scale = GemmaQueryScale(c, 62);
  return Status::Ok();
}

}  // namespace

const ArchSpec kGemma2{.name = "gemma2",
                       .rope_style = RopeStyle::kNeox,
                       .ffn = FfnKind::kGeGlu,
                       .post_norms = true,
                       .embed_scale = true,
                       .read_hparams = ReadGemma2Hparams};
const ArchSpec kGemma3{.name = "gemma3",
                       .rope_style = RopeStyle::kNeox,
                       .ffn = FfnKind::kGeGlu,
                       .qk_norm = true,
                       .post_norms = true,
                       .embed_scale = true,
                       .read_hparams = ReadGemma3Hparams};

}  // namespace sparrow::families
