#pragma once
// Helpers shared by the kernel tests: deterministic random rows, random (but valid) weight
// blocks, the instruction-set variants this CPU can run, and an ISA override guard.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/common/tensor_type.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"

namespace sparrow::kernels::testing {

// Gaussian values with a few large outliers (they stress the scale choice and saturation).
inline std::vector<float> RandomRow(int64_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::uniform_int_distribution<int> pick(0, 63);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng) * (pick(rng) == 0 ? 8.0f : 1.0f);
  return v;
}

// The byte offsets of the fp16 scale fields inside one block of `type`.
inline std::vector<size_t> HalfFieldOffsets(TensorType type) {
  switch (type) {
    case TensorType::kQ4_0:
      return {offsetof(BlockQ4_0, d)};
    case TensorType::kQ4_1:
      return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case TensorType::kQ5_0:
      return {offsetof(BlockQ5_0, d)};
    case TensorType::kQ5_1:
      return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case TensorType::kQ8_0:
      return {offsetof(BlockQ8_0, d)};
    case TensorType::kQ2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case TensorType::kQ3_K:
      return {offsetof(BlockQ3_K, d)};
    case TensorType::kQ4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case TensorType::kQ5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case TensorType::kQ6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {};
  }
}

// A weight row of `n` elements whose quant bytes are uniformly random (every bit pattern,
// including -128 in Q8_0 and extreme sub-block scales) and whose fp16 scales are finite.
inline std::vector<uint8_t> RandomWeightRow(TensorType type, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<uint8_t> row(RowBytes(type, n));
  if (type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16) {
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      if (type == TensorType::kF32) std::memcpy(&row[4 * i], &v, 4);
      const uint16_t h = type == TensorType::kF16 ? Fp32ToFp16(v) : Fp32ToBf16(v);
      if (type != TensorType::kF32) std::memcpy(&row[2 * i], &h, 2);
    }
    return row;
  }
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  const auto traits = GetTensorTypeTraits(type);
  for (int64_t b = 0; b < n / traits->block_elems; ++b) {
    for (size_t off : HalfFieldOffsets(type)) {
      const uint16_t h = Fp32ToFp16(scale(rng));
      std::memcpy(&row[b * traits->block_bytes + off], &h, 2);
    }
  }
  return row;
}

// The SIMD variants this CPU runs (never kScalar).
inline std::vector<KernelIsa> SimdIsas() {
  std::vector<KernelIsa> out;
  for (int i = 1; i < kNumKernelIsas; ++i) {
    if (KernelIsaSupported(static_cast<KernelIsa>(i))) out.push_back(static_cast<KernelIsa>(i));
  }
  return out;
}

// Selects an ISA for the scope of a test and restores the previous one.
class ScopedKernelIsa {
 public:
  explicit ScopedKernelIsa(KernelIsa isa) : saved_(ActiveKernelIsa()) { SetKernelIsa(isa); }
  ~ScopedKernelIsa() { SetKernelIsa(saved_); }
  ScopedKernelIsa(const ScopedKernelIsa&) = delete;
  ScopedKernelIsa& operator=(const ScopedKernelIsa&) = delete;

 private:
  KernelIsa saved_;
};

// The weight types with dot-product kernels.
inline std::vector<TensorType> WeightTypes() {
  return {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16, TensorType::kQ4_0,
          TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ8_0,
          TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
          TensorType::kQ6_K};
}

inline int64_t BlockElems(TensorType type) {
  return GetTensorTypeTraits(type)->block_elems;
}

}  // namespace sparrow::kernels::testing
