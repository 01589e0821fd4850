#pragma once
// Model shapes of real checkpoints (dense and mixture-of-experts, of the families Sparrow reads)
// and llama-quantize's choice of tensor types, for generating synthetic models of realistic size.
// Plain data and pure functions; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/common/tensor_type.h"

namespace sparrow::tools {

struct ModelShape {
  std::string_view name;  // the --shape name, e.g. "llama-3.2-1b"
  std::string_view arch;  // GGUF general.architecture
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_ctx = 0;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;
  bool tied_output = false;
  // The real vocabulary size: the tokenizer copied from --vocab is padded with unused tokens up
  // to it, so the embedding and output matrices have the real model's rows. 0: the vocabulary
  // file's own size (the older shapes, kept comparable with earlier results).
  int64_t n_vocab = 0;
  int64_t head_dim = 0;  // attention.key_length when not n_embd / n_head (0: n_embd / n_head)
  int64_t n_rot = 0;     // rotated dimensions of each head (0: all; Phi-4-mini: 3/4)
  // Per-family parts, as llama.cpp d32676d7 names and reads them.
  bool qk_norm = false;         // attn_q_norm / attn_k_norm per head (qwen3, gemma3)
  bool qk_norm_whole = false;   // ... over the whole q and k rows (olmoe)
  bool post_norms = false;      // post_attention_norm and post_ffw_norm (gemma2/3)
  bool fused = false;           // attn_qkv and ffn_up = [gate; up] (phi3)
  bool rope_freqs = false;      // Llama 3.1's rope_freqs table (factor 32, original context 8192)
  int64_t rope_n_ctx_orig = 0;  // LongRoPE's original context: rope_factors_long/_short (phi3)
  float rope_scale_linear = 0.0f;  // rope.scaling.type linear with this factor (gemma-3-4b)
  int64_t n_swa = 0;               // attention.sliding_window (0: none)
  int64_t swa_pattern = 0;         // attention.sliding_window_pattern (0: the family's default)
  int64_t n_expert = 0;            // 0: dense FFN
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;   // neurons per expert (expert_feed_forward_length)
  int expert_gating = 0;  // expert_gating_func (2: sigmoid, smallthinker); 0: not written
};

// The known shapes; nullopt for an unknown name. "tiny" (256/512, 2 layers) and the other
// "tiny-*" shapes are for tests.
std::optional<ModelShape> FindModelShape(std::string_view name);
std::string KnownShapeNames();  // "smollm2-135m, ..." for messages

// The file type a model is generated in (llama.cpp's ftype names).
enum class ModelFileType { kF16, kQ8_0, kQ4_0, kQ4_K_M };
std::optional<ModelFileType> ParseModelFileType(std::string_view name);
uint32_t GgufFileTypeId(ModelFileType t);  // general.file_type

// Which weight matrix a tensor is, for the type choice.
enum class TensorRole {
  kTokenEmbd,
  kOutput,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOut,
  kFfnGate,
  kFfnUp,
  kFfnDown
};

// The type of a 2-D weight with rows of `cols` elements, as llama-quantize would pick it:
// the output matrix (token_embd when the output is tied) is Q6_K in the 4-bit types; Q4_K_M
// puts attn_v and ffn_down of some layers (use_more_bits: the first and last eighth, and every
// third in between) in Q6_K and the rest in Q4_K. A k-quant whose block does not divide `cols`
// falls back to the legacy type llama-quantize uses (Q4_K -> Q5_0, Q6_K -> Q8_0).
TensorType PickTensorType(ModelFileType ftype, TensorRole role, int64_t layer, int64_t n_layer,
                          int64_t cols, bool tied_output);

}  // namespace sparrow::tools
