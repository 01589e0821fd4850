#include "engine/model/model_config.h"

#include <cmath>

#include "engine/model/gguf_file.h"
#include "engine/model/neuron_bundles.h"

namespace sparrow {
namespace {

// Reads a positive count no larger than `max`, naming the key in errors.
Result<int64_t> ReadCount(const GgufFile& f, const std::string& key, int64_t max) {
  const GgufValue* v = f.Find(key);
  if (v && v->type == GgufValueType::kArray) {
    return Unsupported("metadata key '" + key +
                       "' is a per-layer array; only a single value is supported");
  }
  SPARROW_ASSIGN_OR_RETURN(uint64_t x, f.GetUInt(key));
  if (x == 0 || x > static_cast<uint64_t>(max)) {
    return Corrupt("metadata key '" + key + "' is " + std::to_string(x) + ", expected 1.." +
                   std::to_string(max));
  }
  return static_cast<int64_t>(x);
}

Result<int64_t> ReadCountOr(const GgufFile& f, const std::string& key, int64_t fallback,
                            int64_t max) {
  if (!f.Find(key)) return fallback;
  return ReadCount(f, key, max);
}

}  // namespace

Result<ModelConfig> ReadModelConfig(const GgufFile& f) {
  ModelConfig c;
  SPARROW_ASSIGN_OR_RETURN(std::string_view arch, f.GetString("general.architecture"));
  c.arch = FindArchSpec(arch);
  if (!c.arch) {
    return Unsupported("architecture '" + std::string(arch) +
                       "' is not supported (supported: " + std::string(SupportedArchNames()) + ")");
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

  if (auto type = f.GetString(p + "rope.scaling.type"); type.ok() && *type != "none") {
    if (*type != "linear") {
      return Unsupported("rope.scaling.type '" + std::string(*type) +
                         "' (supported: none, linear)");
    }
    SPARROW_ASSIGN_OR_RETURN(double factor, f.GetFloatOr(p + "rope.scaling.factor", 1.0));
    if (!(factor > 0 && std::isfinite(factor)))
      return Corrupt("rope.scaling.factor is " + std::to_string(factor));
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (auto factor = f.GetFloatOr(p + "rope.scale_linear", 1.0); factor.ok() && *factor > 0) {
    c.rope_freq_scale = static_cast<float>(1.0 / *factor);
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
  return c;
}

}  // namespace sparrow
