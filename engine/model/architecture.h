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

struct ArchSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope_style;
  bool attn_qkv_bias;  // attn_q/k/v carry bias vectors (required)
};

// The spec for `general.architecture`, or nullptr when Sparrow does not support it.
const ArchSpec* FindArchSpec(std::string_view name);
// Comma-separated names, for error messages.
std::string_view SupportedArchNames();

}  // namespace sparrow
