#pragma once
// ArchSpec: what distinguishes one supported architecture from another, as data. Adding a
// llama-like family (mistral, phi3, gemma) means a new row here plus, at most, a small flag
// the forward pass honours, never a copy of the forward pass.
#include <string_view>

namespace sparrow {

enum class RopeStyle {
  kNormal,  // GPT-J style: rotates adjacent pairs (2i, 2i+1) — llama
  kNeox,    // GPT-NeoX style: rotates (i, i + n_rot/2) — qwen2
};

// The gated feed-forward's activation: h = act_gate(gate . x) * act_up(up . x).
enum class FfnKind {
  kSwiGlu,    // silu(gate) * up — llama, qwen2, mistral
  kReluGlu,   // relu(gate) * up — ReluLLaMA, ProSparse (arch 'llama' in a PowerInfer file)
  kDReluGlu,  // relu(gate) * relu(up) — dReLU: Bamboo, TurboSparse
};

struct ArchSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope_style;
  bool attn_qkv_bias;  // attn_q/k/v carry bias vectors (required)
  FfnKind ffn;         // in an ordinary GGUF; a PowerInfer file turns SwiGLU into ReLU-GLU
};

// The spec for `general.architecture`, or nullptr when Sparrow does not support it.
const ArchSpec* FindArchSpec(std::string_view name);
// Comma-separated names, for error messages.
std::string_view SupportedArchNames();

}  // namespace sparrow
