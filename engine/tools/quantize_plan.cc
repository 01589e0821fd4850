#include "engine/tools/quantize_plan.h"

#include <cstdio>
#include <optional>
#include <string>

namespace sparrow::tools {
namespace {

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// llama-quantize gives 8-expert models (Mixtral's shape) more bits in attention: it tests for
// exactly 8, so other expert counts keep the ordinary choice.
TensorType EightExpertRule(ModelFileType ftype, TensorRole role, TensorType picked) {
  if (role == TensorRole::kAttnV || role == TensorRole::kAttnK) return TensorType::kQ8_0;
  if (role == TensorRole::kAttnOut && ftype == ModelFileType::kQ4_K_M) return TensorType::kQ5_K;
  return picked;
}

// llama-quantize's fallback when a block does not divide the row, and F16 when even the
// fallback does not fit; nullopt when it defines no fallback for `t`.
std::optional<TensorType> FitRow(TensorType t, int64_t cols) {
  const uint32_t block = GetTensorTypeTraits(t)->block_elems;
  if (cols % block == 0) return t;
  TensorType fallback;
  switch (t) {
    case TensorType::kQ4_K:
      fallback = TensorType::kQ5_0;
      break;
    case TensorType::kQ5_K:
      fallback = TensorType::kQ5_1;
      break;
    case TensorType::kQ6_K:
      fallback = TensorType::kQ8_0;
      break;
    default:
      return std::nullopt;
  }
  return cols % GetTensorTypeTraits(fallback)->block_elems == 0 ? fallback : TensorType::kF16;
}

}  // namespace

bool IsQuantizable(std::string_view name, std::span<const uint64_t> dims) {
  if (dims.size() < 2) return false;
  if (!name.ends_with("weight")) return false;
  return !Contains(name, "_norm.weight") && !Contains(name, "ffn_gate_inp.weight") &&
         !Contains(name, "rope_freqs") && !Contains(name, "rope_factors");
}

TensorRole RoleOf(std::string_view name, int64_t* layer) {
  long long il = 0;
  *layer = std::sscanf(std::string(name).c_str(), "blk.%lld.", &il) == 1 ? il : 0;
  // The order of llama-quantize's name tests: attn_qkv counts as attn_v, ffn_up before ffn_gate.
  if (name == "output.weight") return TensorRole::kOutput;
  if (name == "token_embd.weight") return TensorRole::kTokenEmbd;
  if (Contains(name, "attn_qkv.weight") || Contains(name, "attn_v.weight")) {
    return TensorRole::kAttnV;
  }
  if (Contains(name, "attn_k.weight")) return TensorRole::kAttnK;
  if (Contains(name, "attn_output.weight")) return TensorRole::kAttnOut;
  if (Contains(name, "ffn_up")) return TensorRole::kFfnUp;
  if (Contains(name, "ffn_gate")) return TensorRole::kFfnGate;
  if (Contains(name, "ffn_down")) return TensorRole::kFfnDown;
  return TensorRole::kAttnQ;
}

Result<TensorType> QuantizedType(ModelFileType ftype, std::string_view name, int64_t cols,
                                 const QuantizeModelFacts& facts) {
  int64_t layer = 0;
  const TensorRole role = RoleOf(name, &layer);
  TensorType t = PickTensorType(ftype, role, layer, facts.n_layer, cols, facts.tied_output);
  if (ftype == ModelFileType::kF16) return t;
  const bool is_output =
      role == TensorRole::kOutput || (facts.tied_output && role == TensorRole::kTokenEmbd);
  if (facts.n_expert == 8 && !is_output) t = EightExpertRule(ftype, role, t);
  const std::optional<TensorType> fitted = FitRow(t, cols);
  if (!fitted) {
    return InvalidArgument("tensor '" + std::string(name) + "': rows of " + std::to_string(cols) +
                           " elements do not fit " + std::string(TensorTypeName(t)) +
                           " blocks and llama-quantize has no fallback for it");
  }
  return *fitted;
}

}  // namespace sparrow::tools
