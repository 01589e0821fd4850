#include "engine/tools/mkmodel_shapes.h"

namespace sparrow::tools {
namespace {

// Shapes as published in each model's config.json.
constexpr ModelShape kShapes[] = {
    {"smollm2-135m", "llama", 576, 1536, 30, 9, 3, 8192, 100000.0f, 1e-5f, false, true},
    {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 32768, 1000000.0f, 1e-6f, true, true},
    {"llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 131072, 500000.0f, 1e-5f, false, true},
    {"tinyllama-1.1b", "llama", 2048, 5632, 22, 32, 4, 2048, 10000.0f, 1e-5f, false, false},
    {"llama-2-7b", "llama", 4096, 11008, 32, 32, 32, 4096, 10000.0f, 1e-5f, false, false},
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
