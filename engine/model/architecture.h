#pragma once
// ArchSpec: what distinguishes one supported architecture from another, as data. Each family
// lives in its own file under families/ (the way llama.cpp's src/models/ splits them): its rows
// here plus, where it adds hyper-parameters, a hook that reads them. The forward pass honours the
// flags; no family has a copy of it.
#include <string>
#include <string_view>

#include "engine/common/status.h"

namespace sparrow {

class GgufFile;
struct ModelConfig;

enum class RopeStyle {
  kNormal,  // GPT-J style: rotates adjacent pairs (2i, 2i+1) — llama
  kNeox,    // GPT-NeoX style: rotates (i, i + n_rot/2) — qwen2, qwen3, gemma
};

// The feed-forward's activation: h = act_gate(gate . x) * act_up(up . x) for the gated kinds.
enum class FfnKind {
  kSwiGlu,    // silu(gate) * up — llama, qwen2, mistral
  kReluGlu,   // relu(gate) * up — ReluLLaMA, ProSparse (arch 'llama' in a PowerInfer file)
  kDReluGlu,  // relu(gate) * relu(up) — dReLU: Bamboo, TurboSparse
  kGeGlu,     // gelu_tanh(gate) * up — gemma
  kGelu,      // gelu_tanh(up . x), no gate — bert
};

struct ArchSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope_style = RopeStyle::kNormal;
  bool attn_qkv_bias = false;      // attn_q/k/v carry bias vectors (required)
  FfnKind ffn = FfnKind::kSwiGlu;  // in an ordinary GGUF; a PowerInfer file turns SwiGLU into ReLU
  bool qk_norm = false;            // attn_q_norm / attn_k_norm: RMSNorm of each head before RoPE
  bool qk_norm_whole = false;      // with qk_norm: one norm over the whole q and k rows (OLMoE)
  bool post_norms = false;         // post_attention_norm / post_ffw_norm on each block's output
  bool embed_scale = false;        // token embeddings times sqrt(n_embd)
  bool experts = false;        // the FFN is always a mixture of experts (llama: if expert_count)
  bool rope_freqs = false;     // may carry rope_freqs.weight (per-dimension factors, Llama 3.1)
  bool fused_gate_up = false;  // ffn_up holds the gate rows, then the up rows (Phi-3)
  bool router_on_layer_input = false;  // the router reads the layer's input (SmallThinker)
  // An encoder (BERT): the input rows are the token's embedding plus token type 0's
  // (token_types) and, with abs_positions, the position's (position_embd), LayerNormed
  // (token_embd_norm); each block adds attention's output to its input and LayerNorms the sum
  // (attn_output_norm), then the FFN's (layer_output_norm), every norm with a bias; no output
  // norm or head: the last block's rows are the hidden states an embedding pools. Its attention
  // sees the whole input unless `<name>.attention.causal` says otherwise.
  bool encoder = false;
  bool abs_positions = false;  // position_embd: one learned row per position (n_ctx_train rows)
  // Pooling rank reads the last token's row (not the first) and ends with a softmax over the
  // labels (Qwen3-Reranker's yes/no rule; llama.cpp's build_pooling).
  bool rank_last_softmax = false;
  // Reads the hyper-parameters this family adds (keys under "<name>."), after the common ones.
  Status (*read_hparams)(const GgufFile& f, const std::string& prefix, ModelConfig& c) = nullptr;
};

// The spec for `general.architecture`, or nullptr when Sparrow does not support it.
const ArchSpec* FindArchSpec(std::string_view name);
// Comma-separated names, for error messages.
std::string SupportedArchNames();

}  // namespace sparrow
