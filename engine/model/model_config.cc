#include "engine/model/model_config.h"

#include <cmath>

#include "engine/model/gguf_file.h"
#include "engine/model/hparam_reader.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {

namespace {

// rope.scaling.*: none, linear (positions divided by the factor) or YaRN, whose attention factor
// is derived as llama.cpp's context does it.
Status ReadRopeScaling(const GgufFile& f, const std::string& p, ModelConfig& c) {
  std::string type = "linear";  // llama.cpp's default: a bare scaling factor is linear
  if (auto t = f.GetString(p + "rope.scaling.type"); t.ok()) type = std::string(*t);
  if (type != "none" && type != "linear" && type != "yarn") {
    return Unsupported("rope.scaling.type '" + type + "' (supported: none, linear, yarn)");
  }
  double factor = 0;
  if (f.Find(p + "rope.scaling.factor")) {
    SPARROW_ASSIGN_OR_RETURN(factor, f.GetFloat(p + "rope.scaling.factor"));
  } else if (f.Find(p + "rope.scale_linear")) {
    SPARROW_ASSIGN_OR_RETURN(factor, f.GetFloat(p + "rope.scale_linear"));
  }
  if (!(factor >= 0 && std::isfinite(factor)))
    return Corrupt("rope.scaling.factor is " + std::to_string(factor));
  c.rope_freq_scale = factor == 0 || type == "none" ? 1.0f : static_cast<float>(1.0 / factor);
  SPARROW_ASSIGN_OR_RETURN(float attn_factor,
                           ReadFloatOr(f, p + "rope.scaling.attn_factor", 1.0, 0, 1e3));
  SPARROW_ASSIGN_OR_RETURN(
      c.rope_n_ctx_orig,
      ReadCountOr(f, p + "rope.scaling.original_context_length", c.n_ctx_train, int64_t{1} << 24));
  c.rope_attn_factor = 1.0f;
  if (type == "yarn") {
    c.rope_ext_factor = 1.0f;
    const float scale = 1.0f / c.rope_freq_scale;
    SPARROW_ASSIGN_OR_RETURN(float log_mul,
                             ReadFloatOr(f, p + "rope.scaling.yarn_log_multiplier", 0, -1e3, 1e3));
    auto mscale = [scale](float m) { return scale <= 1 ? 1.0f : 0.1f * m * std::log(scale) + 1; };
    c.rope_attn_factor = log_mul != 0 ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
    // ggml's rope_yarn multiplies by 1 + 0.1 ln(scale) again; llama.cpp cancels it here.
    c.rope_attn_factor *= 1.0f / (1.0f + 0.1f * std::log(scale));
  }
  c.rope_attn_factor *= attn_factor;
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ReadModelConfig(const GgufFile& f) {
  ModelConfig c;
  SPARROW_ASSIGN_OR_RETURN(std::string_view arch, f.GetString("general.architecture"));
  c.arch = FindArchSpec(arch);
  if (!c.arch) {
    return Unsupported("architecture '" + std::string(arch) +
                       "' is not supported (supported: " + SupportedArchNames() + ")");
  }
  if (auto name = f.GetString("general.name"); name.ok()) c.name = std::string(*name);
  c.ffn_kind = c.arch->ffn;
  c.powerinfer = f.powerinfer();
  if (!c.powerinfer) {  // a PowerInfer file converted to neuron bundles keeps its semantics
    SPARROW_ASSIGN_OR_RETURN(c.powerinfer, f.GetBoolOr(bundle_keys::kPowerInfer, false));
  }
  if (c.powerinfer) {
    if (c.ffn_kind == FfnKind::kSwiGlu) c.ffn_kind = FfnKind::kReluGlu;
    SPARROW_ASSIGN_OR_RETURN(double threshold, f.GetFloatOr("powerinfer.sparse_threshold", 0.0));
    if (!std::isfinite(threshold))
      return Corrupt("powerinfer.sparse_threshold is " + std::to_string(threshold));
    c.sparse_threshold = static_cast<float>(threshold);
  }
  const std::string p = std::string(arch) + ".";

  constexpr int64_t kMaxDim = int64_t{1} << 20;
  SPARROW_ASSIGN_OR_RETURN(c.n_embd, ReadCount(f, p + "embedding_length", kMaxDim));
  SPARROW_ASSIGN_OR_RETURN(c.n_layer, ReadCount(f, p + "block_count", 4096));
  SPARROW_ASSIGN_OR_RETURN(c.n_ff, ReadCount(f, p + "feed_forward_length", kMaxDim));
  SPARROW_ASSIGN_OR_RETURN(c.n_head, ReadCount(f, p + "attention.head_count", 4096));
  SPARROW_ASSIGN_OR_RETURN(c.n_head_kv,
                           ReadCountOr(f, p + "attention.head_count_kv", c.n_head, 4096));
  SPARROW_ASSIGN_OR_RETURN(c.n_ctx_train,
                           ReadCountOr(f, p + "context_length", 2048, int64_t{1} << 24));
  if (c.n_head % c.n_head_kv != 0) {
    return Corrupt("attention.head_count " + std::to_string(c.n_head) +
                   " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
  }
  if (!f.Find(p + "attention.key_length") && c.n_embd % c.n_head != 0) {
    return Corrupt("embedding_length " + std::to_string(c.n_embd) +
                   " is not a multiple of head_count " + std::to_string(c.n_head));
  }
  SPARROW_ASSIGN_OR_RETURN(c.head_dim,
                           ReadCountOr(f, p + "attention.key_length", c.n_embd / c.n_head, 4096));
  SPARROW_ASSIGN_OR_RETURN(int64_t v_len,
                           ReadCountOr(f, p + "attention.value_length", c.head_dim, 4096));
  if (v_len != c.head_dim) {
    return Unsupported("attention.value_length " + std::to_string(v_len) +
                       " differs from key_length " + std::to_string(c.head_dim));
  }
  SPARROW_ASSIGN_OR_RETURN(c.n_rot, ReadCountOr(f, p + "rope.dimension_count", c.head_dim, 4096));
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0) {
    return Corrupt("rope.dimension_count " + std::to_string(c.n_rot) +
                   " must be even and at most the head size " + std::to_string(c.head_dim));
  }

  SPARROW_ASSIGN_OR_RETURN(double eps, f.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(eps > 0 && eps < 1))
    return Corrupt("attention.layer_norm_rms_epsilon is " + std::to_string(eps));
  c.rms_eps = static_cast<float>(eps);
  SPARROW_ASSIGN_OR_RETURN(double base, f.GetFloatOr(p + "rope.freq_base", 10000.0));
  if (!(base > 1 && std::isfinite(base)))
    return Corrupt("rope.freq_base is " + std::to_string(base));
  c.rope_freq_base = static_cast<float>(base);

  SPARROW_RETURN_IF_ERROR(ReadRopeScaling(f, p, c));
  SPARROW_ASSIGN_OR_RETURN(c.causal, f.GetBoolOr(p + "attention.causal", true));
  if (!c.causal && !c.arch->encoder) {
    return Unsupported(p + "attention.causal is false for '" + std::string(arch) +
                       "', a decoder; only encoders may attend to later positions");
  }

  // The vocabulary size comes from the token list; the embedding tensor must agree (checked by the
  // weights).
  if (auto tokens = f.GetArray("tokenizer.ggml.tokens"); tokens.ok()) {
    c.n_vocab = static_cast<int64_t>((*tokens)->size);
  } else if (const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
             emb && emb->dims.size() == 2) {
    c.n_vocab = static_cast<int64_t>(emb->dims[1]);
  }
  if (c.n_vocab <= 0)
    return Corrupt("no vocabulary: tokenizer.ggml.tokens and token_embd.weight are missing");
  if (c.arch->embed_scale) c.embed_scale = std::sqrt(static_cast<float>(c.n_embd));
  if (c.arch->read_hparams) SPARROW_RETURN_IF_ERROR(c.arch->read_hparams(f, p, c));
  return c;
}

}  // namespace sparrow
