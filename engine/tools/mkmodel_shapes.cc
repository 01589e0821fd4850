#include "engine/tools/mkmodel_shapes.h"

namespace sparrow::tools {
namespace {

// Qwen3's dense models: 8 KV heads of 128, QK-norm, tied output, 151936 tokens, rope base 1e6.
constexpr ModelShape Qwen3(std::string_view name, int64_t n_embd, int64_t n_ff, int64_t n_layer,
                           int64_t n_head) {
  return {.name = name,
          .arch = "qwen3",
          .n_embd = n_embd,
          .n_ff = n_ff,
          .n_layer = n_layer,
          .n_head = n_head,
          .n_head_kv = 8,
          .n_ctx = 40960,
          .rope_freq_base = 1e6f,
          .rms_eps = 1e-6f,
          .tied_output = true,
          .n_vocab = 151936,
          .head_dim = 128,
          .qk_norm = true};
}

// Shapes as published in each model's config.json. The older dense shapes keep the vocabulary
// file's size (see ModelShape::n_vocab).
constexpr ModelShape kShapes[] = {
    {"smollm2-135m", "llama", 576, 1536, 30, 9, 3, 8192, 100000.0f, 1e-5f, false, true},
    {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 32768, 1000000.0f, 1e-6f, true, true},
    {"llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 131072, 500000.0f, 1e-5f, false, true},
    {"tinyllama-1.1b", "llama", 2048, 5632, 22, 32, 4, 2048, 10000.0f, 1e-5f, false, false},
    {"llama-2-7b", "llama", 4096, 11008, 32, 32, 32, 4096, 10000.0f, 1e-5f, false, false},
    // The newer families, from each model's config.json on Hugging Face (vocab_size, head_dim,
    // sliding_window, rope_theta, ...) in the form llama.cpp d32676d7's converter writes them.
    // clang-format off
    Qwen3("qwen3-0.6b", 1024, 3072, 28, 16),
    Qwen3("qwen3-1.7b", 2048, 6144, 28, 16),
    Qwen3("qwen3-4b", 2560, 9728, 36, 32),
    // Gemma 3: five sliding layers in six; local RoPE base 10000 is the reader's default.
    {.name = "gemma-3-1b", .arch = "gemma3", .n_embd = 1152, .n_ff = 6912, .n_layer = 26,
     .n_head = 4, .n_head_kv = 1, .n_ctx = 32768, .rope_freq_base = 1e6f, .rms_eps = 1e-6f,
     .tied_output = true, .n_vocab = 262144, .head_dim = 256, .qk_norm = true, .post_norms = true,
     .n_swa = 512, .swa_pattern = 6},
    {.name = "gemma-3-4b", .arch = "gemma3", .n_embd = 2560, .n_ff = 10240, .n_layer = 34,
     .n_head = 8, .n_head_kv = 4, .n_ctx = 131072, .rope_freq_base = 1e6f, .rms_eps = 1e-6f,
     .tied_output = true, .n_vocab = 262208, .head_dim = 256, .qk_norm = true, .post_norms = true,
     .rope_scale_linear = 8.0f, .n_swa = 1024, .swa_pattern = 6},
    {.name = "llama-3.2-3b", .arch = "llama", .n_embd = 3072, .n_ff = 8192, .n_layer = 28,
     .n_head = 24, .n_head_kv = 8, .n_ctx = 131072, .rope_freq_base = 500000.0f,
     .tied_output = true, .n_vocab = 128256, .rope_freqs = true},
    // Phi-4-mini: partial rotary 0.75, LongRoPE from 4096; its sliding_window is ignored.
    {.name = "phi-4-mini", .arch = "phi3", .n_embd = 3072, .n_ff = 8192, .n_layer = 32,
     .n_head = 24, .n_head_kv = 8, .n_ctx = 131072, .tied_output = true, .n_vocab = 200064,
     .n_rot = 96, .fused = true, .rope_n_ctx_orig = 4096, .n_swa = 262144},
    {.name = "olmoe-1b-7b", .arch = "olmoe", .n_embd = 2048, .n_ff = 1024, .n_layer = 16,
     .n_head = 16, .n_head_kv = 16, .n_ctx = 4096, .n_vocab = 50304, .qk_norm_whole = true,
     .n_expert = 64, .n_expert_used = 8, .n_ff_exp = 1024},
    {.name = "qwen3-30b-a3b", .arch = "qwen3moe", .n_embd = 2048, .n_ff = 6144, .n_layer = 48,
     .n_head = 32, .n_head_kv = 4, .n_ctx = 40960, .rope_freq_base = 1e6f, .rms_eps = 1e-6f,
     .n_vocab = 151936, .head_dim = 128, .qk_norm = true, .n_expert = 128, .n_expert_used = 8,
     .n_ff_exp = 768},
    // SmallThinker-4BA0.6B: no sliding layer (sliding_window_layout all 0, so the converter
    // writes no window), sigmoid router; feed_forward_length is the expert's, as converted.
    {.name = "smallthinker-4b-a0.6b", .arch = "smallthinker", .n_embd = 1536, .n_ff = 768,
     .n_layer = 32, .n_head = 12, .n_head_kv = 2, .n_ctx = 32768, .rope_freq_base = 1.5e6f,
     .rms_eps = 1e-6f, .n_vocab = 151936, .head_dim = 128, .n_expert = 32, .n_expert_used = 4,
     .n_ff_exp = 768, .expert_gating = 2},
    // clang-format on
    {"tiny", "llama", 256, 512, 2, 4, 2, 512, 10000.0f, 1e-5f, false, false},
    {"tiny-qwen2", "qwen2", 256, 512, 2, 4, 2, 512, 1000000.0f, 1e-6f, true, true},
};

// llama-quantize's rule for spending more bits on some layers of attn_v / ffn_down.
bool UseMoreBits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

TensorType FitBlocks(TensorType t, int64_t cols) {
  if (cols % 256 == 0) return t;
  if (t == TensorType::kQ4_K) return TensorType::kQ5_0;
  if (t == TensorType::kQ6_K) return TensorType::kQ8_0;
  return t;
}

}  // namespace

std::optional<ModelShape> FindModelShape(std::string_view name) {
  for (const ModelShape& s : kShapes) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

std::string KnownShapeNames() {
  std::string out;
  for (const ModelShape& s : kShapes) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

std::optional<ModelFileType> ParseModelFileType(std::string_view name) {
  if (name == "f16") return ModelFileType::kF16;
  if (name == "q8_0") return ModelFileType::kQ8_0;
  if (name == "q4_0") return ModelFileType::kQ4_0;
  if (name == "q4_k_m") return ModelFileType::kQ4_K_M;
  return std::nullopt;
}

uint32_t GgufFileTypeId(ModelFileType t) {
  switch (t) {
    case ModelFileType::kF16:
      return 1;
    case ModelFileType::kQ8_0:
      return 7;
    case ModelFileType::kQ4_0:
      return 2;
    case ModelFileType::kQ4_K_M:
      return 15;
  }
  return 0;
}

TensorType PickTensorType(ModelFileType ftype, TensorRole role, int64_t layer, int64_t n_layer,
                          int64_t cols, bool tied_output) {
  const bool is_output =
      role == TensorRole::kOutput || (tied_output && role == TensorRole::kTokenEmbd);
  switch (ftype) {
    case ModelFileType::kF16:
      return TensorType::kF16;
    case ModelFileType::kQ8_0:
      return TensorType::kQ8_0;
    case ModelFileType::kQ4_0:
      return is_output ? FitBlocks(TensorType::kQ6_K, cols) : TensorType::kQ4_0;
    case ModelFileType::kQ4_K_M:
      if (is_output) return FitBlocks(TensorType::kQ6_K, cols);
      if ((role == TensorRole::kAttnV || role == TensorRole::kFfnDown) &&
          UseMoreBits(layer, n_layer)) {
        return FitBlocks(TensorType::kQ6_K, cols);
      }
      return FitBlocks(TensorType::kQ4_K, cols);
  }
  return TensorType::kF32;
}

}  // namespace sparrow::tools
