#pragma once
// Model shapes of real dense checkpoints and llama-quantize's choice of tensor types, for
// generating synthetic models of realistic size. Plain data and pure functions; thread-safe.
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
};

// The known shapes; nullopt for an unknown name. "tiny" (256/512, 2 layers) is for tests.
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
