#pragma once
// TensorType: the ggml tensor element types as numbered in GGUF files, and their block layout.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sparrow {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
};

struct TensorTypeTraits {
  std::string_view name;  // as llama.cpp prints it: "q4_K"
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool weight_supported;  // Sparrow can compute with weights of this type
};

// Traits of a type id read from a file; nullopt for an id ggml does not define.
std::optional<TensorTypeTraits> GetTensorTypeTraits(uint32_t type_id);
inline std::optional<TensorTypeTraits> GetTensorTypeTraits(TensorType t) {
  return GetTensorTypeTraits(static_cast<uint32_t>(t));
}
std::string_view TensorTypeName(TensorType t);

// The element types a KV cache can store, by the names of llama.cpp's --cache-type-k and
// --cache-type-v ("f16", "q8_0"); nullopt for any other name.
std::optional<TensorType> KvCacheTypeFromName(std::string_view name);
// Those names, comma separated, for error messages.
std::string_view KvCacheTypeNames();

}  // namespace sparrow
