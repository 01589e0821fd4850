#include "engine/common/tensor_type.h"

namespace sparrow {
namespace {

// Indexed by type id. Sizes follow ggml's block structs (QK_K = 256).
constexpr TensorTypeTraits kTraits[] = {
    {"f32", 1, 4, true},          // 0
    {"f16", 1, 2, true},          // 1
    {"q4_0", 32, 18, true},       // 2
    {"q4_1", 32, 20, true},       // 3
    {"", 0, 0, false},            // 4 (removed Q4_2)
    {"", 0, 0, false},            // 5 (removed Q4_3)
    {"q5_0", 32, 22, true},       // 6
    {"q5_1", 32, 24, true},       // 7
    {"q8_0", 32, 34, true},       // 8
    {"q8_1", 32, 36, false},      // 9
    {"q2_K", 256, 84, true},      // 10
    {"q3_K", 256, 110, true},     // 11
    {"q4_K", 256, 144, true},     // 12
    {"q5_K", 256, 176, true},     // 13
    {"q6_K", 256, 210, true},     // 14
    {"q8_K", 256, 292, false},    // 15
    {"iq2_xxs", 256, 66, false},  // 16
    {"iq2_xs", 256, 74, false},   // 17
    {"iq3_xxs", 256, 98, false},  // 18
    {"iq1_s", 256, 50, false},    // 19
    {"iq4_nl", 32, 18, false},    // 20
    {"iq3_s", 256, 110, false},   // 21
    {"iq2_s", 256, 82, false},    // 22
    {"iq4_xs", 256, 136, false},  // 23
    {"i8", 1, 1, false},          // 24
    {"i16", 1, 2, false},         // 25
    {"i32", 1, 4, false},         // 26
    {"i64", 1, 8, false},         // 27
    {"f64", 1, 8, false},         // 28
    {"iq1_m", 256, 56, false},    // 29
    {"bf16", 1, 2, true},         // 30
};

}  // namespace

std::optional<TensorTypeTraits> GetTensorTypeTraits(uint32_t type_id) {
  if (type_id >= sizeof(kTraits) / sizeof(kTraits[0])) return std::nullopt;
  const TensorTypeTraits& t = kTraits[type_id];
  if (t.block_elems == 0) return std::nullopt;
  return t;
}

namespace {

// Those Sparrow writes as llama.cpp's CPU backend does (kernels/kv_quantize.h).
constexpr TensorType kKvCacheTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                        TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                                        TensorType::kQ5_0, TensorType::kQ5_1};

}  // namespace

std::optional<TensorType> KvCacheTypeFromName(std::string_view name) {
  for (TensorType t : kKvCacheTypes) {
    if (TensorTypeName(t) == name) return t;
  }
  return std::nullopt;
}

std::string_view KvCacheTypeNames() {
  return "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1";
}

std::string_view TensorTypeName(TensorType t) {
  auto traits = GetTensorTypeTraits(t);
  return traits ? traits->name : std::string_view("unknown");
}

}  // namespace sparrow
