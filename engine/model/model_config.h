#pragma once
// ModelConfig: the hyper-parameters of a transformer, read and checked from GGUF metadata.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/model/architecture.h"

namespace sparrow {

class GgufFile;

struct ModelConfig {
  const ArchSpec* arch = nullptr;
  std::string name;  // general.name, may be empty
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  // {arch}.context_length
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // {arch}.attention.key_length, default n_embd / n_head
  int64_t n_rot = 0;     // {arch}.rope.dimension_count, default head_dim
  float rms_eps = 1e-5f;
  float norm_eps = 1e-12f;  // LayerNorm's ({arch}.attention.layer_norm_epsilon: encoders)
  // {arch}.attention.causal: each token attends to the positions up to its own; false (an
  // encoder's) to every position of its input, which is then computed whole in one pass.
  bool causal = true;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (linear and YaRN scaling)
  // YaRN (rope.scaling.type yarn): positions past the original context are interpolated in the
  // low frequencies only, and attention sharpened by attn_factor (ggml's rope_yarn).
  float rope_ext_factor = 0.0f;   // 0: no YaRN ramp
  float rope_attn_factor = 1.0f;  // multiplies cos and sin
  float rope_beta_fast = 32.0f;
  float rope_beta_slow = 1.0f;
  int64_t rope_n_ctx_orig = 0;  // rope.scaling.original_context_length, default context_length

  // Attention. q_scale != 0: q is multiplied by it after RoPE and the scores are not scaled
  // again (gemma's query_pre_attn_scalar); 0: scores times 1/sqrt(head_dim).
  float q_scale = 0.0f;
  float attn_softcap = 0.0f;   // scores = cap * tanh(scores / cap) before the softmax (gemma2)
  float final_softcap = 0.0f;  // the same on the output logits
  // Sliding-window layers attend to the n_swa most recent positions (their own included), with
  // their own RoPE base and scale.
  int64_t n_swa = 0;
  std::vector<uint8_t> swa_layers;  // n_layer flags; empty: none
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  float embed_scale = 0.0f;             // token embeddings are multiplied by it; 0: not scaled
  std::vector<uint8_t> no_rope_layers;  // n_layer flags: 1 skips RoPE (SmolLM3); empty: none
  // LongRoPE (Phi-3): the per-dimension factors for contexts past rope_n_ctx_orig, else the
  // short ones; the model's whole context decides, as llama.cpp's n_ctx does.
  bool rope_long_factors = false;

  // Mixture of experts: each token's FFN is the weighted sum of n_expert_used of n_expert
  // expert FFNs of n_ff_exp neurons, chosen by the router's softmax.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  enum class ExpertGating { kSoftmax, kSigmoid };  // router logits to weights
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_weights_norm = false;   // the chosen experts' weights renormalised to sum 1
  float expert_weights_scale = 0.0f;  // 0 or 1: unscaled
  FfnKind ffn_kind = FfnKind::kSwiGlu;
  // PowerInfer's format: the file carries per-layer predictors and the down projection
  // transposed; a neuron runs when its predictor logit >= sparse_threshold.
  bool powerinfer = false;
  float sparse_threshold = 0.0f;  // powerinfer.sparse_threshold

  int64_t q_dim() const { return n_head * head_dim; }
  // An encoder-only model: no output head, it serves embeddings, not generations.
  bool embedding_only() const { return arch->encoder; }
  bool is_swa(int64_t il) const { return !swa_layers.empty() && swa_layers[il] != 0; }
  bool uses_rope(int64_t il) const { return no_rope_layers.empty() || no_rope_layers[il] == 0; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Reads and validates the hyper-parameters; errors name the metadata key at fault.
Result<ModelConfig> ReadModelConfig(const GgufFile& file);

}  // namespace sparrow
