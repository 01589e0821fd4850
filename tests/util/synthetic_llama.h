#pragma once
// Small complete llama-architecture GGUF models with chosen shapes, tensor types and seed, for
// runtime tests: every metadata key llama.cpp needs, an SPM vocabulary, and deterministic
// random weights. Pure functions of the spec; thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/tensor_type.h"
#include "tests/util/gguf_writer.h"

namespace sparrow::testing {

struct LlamaModelSpec {
  uint32_t n_vocab = 300;  // ignored (512) with kStories260K
  uint32_t n_embd = 64;
  uint32_t n_layer = 2;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t head_dim = 0;  // 0: n_embd / n_head; otherwise also writes attention.key_length etc.
  uint32_t n_ff = 128;
  uint32_t n_ctx = 256;   // llama.context_length
  uint32_t rope_dim = 0;  // 0: head_dim
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;

  // Type of the 2-D weight matrices; norms are always F32.
  TensorType weight_type = TensorType::kF32;
  TensorType embd_type = TensorType::kF32;    // token_embd.weight
  TensorType output_type = TensorType::kF32;  // output.weight
  // Per-tensor types by the name without "blk.N." and ".weight", e.g. {"ffn_down", kF16}.
  std::map<std::string, TensorType> type_overrides;
  bool tied_output = false;  // true: no output.weight (the runtime reuses token_embd)
  // > 0: PowerInfer's sparse layout of that predictor rank: magic PWRI, ffn_down_t instead of
  // ffn_down, predictor fc1/fc2 per layer. `arch` "llama" (ReLU-GLU there) or "bamboo" (dReLU).
  uint32_t predictor_rank = 0;
  std::string arch = "llama";
  float sparse_threshold = 0.0f;  // powerinfer.sparse_threshold, with predictor_rank

  uint64_t seed = 1;
  float weight_scale = 0.05f;  // weights uniform in [-scale, scale]; norms 1 +- scale

  enum class Vocab { kSynthetic, kStories260K };
  // kSynthetic: <unk> <s> </s>, byte tokens <0x00>.. (as many as fit), then "▁"/letter pieces.
  // kStories260K: the tokenizer.* keys of ../shared/models/stories260K.gguf (n_vocab 512).
  Vocab vocab = Vocab::kSynthetic;

  uint32_t gguf_version = 3;
  uint32_t alignment = 0;  // 0: default 32, no general.alignment key
  QuantizeRowFn quantize;  // empty: ConvertRowBuiltin (own F16/BF16, kernels::QuantizeRow)

  uint32_t head_dim_or_default() const { return head_dim ? head_dim : n_embd / n_head; }
};

// The model as a writer, so a test can add or change entries before building.
// Returns an error only when kStories260K is asked for and that file cannot be read.
Result<GgufWriter> MakeLlamaModel(const LlamaModelSpec& spec);
Status WriteLlamaModel(const LlamaModelSpec& spec, const std::string& path);

// Tensor names and ggml-order shapes of the model, in file order.
std::vector<std::pair<std::string, std::vector<uint64_t>>> LlamaTensorShapes(
    const LlamaModelSpec& spec);
// The f32 values a tensor was made from (before conversion to its type); reproducible from
// (seed, name), so tests can compute reference outputs.
std::vector<float> LlamaTensorValues(const LlamaModelSpec& spec, std::string_view name);

// The synthetic SPM vocabulary: tokens, scores and token types (llama.cpp's numbering).
struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};
SpmVocab MakeSyntheticSpmVocab(uint32_t n_vocab);

}  // namespace sparrow::testing
