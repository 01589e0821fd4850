#include "engine/kernels/kv_quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {
namespace {

// The element of largest magnitude with its sign, the first one on ties.
float SignedMax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, float* lo, float* hi) {
  *lo = FLT_MAX;
  *hi = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    *lo = std::min(*lo, x[j]);
    *hi = std::max(*hi, x[j]);
  }
}

float Inverse(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// v + offset truncated toward zero, as a C cast to int8_t does, capped at `top`.
int Level(float v, float offset, int top) {
  return std::min(top, static_cast<int>(static_cast<int8_t>(v + offset)));
}

// Element j and j + 16 share a byte: low nibble, high nibble; bit 4 of each goes to qh.
void Pack(const int* q, uint8_t* qs, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const int a = q[j], b = q[j + kQK / 2];
    qs[j] = static_cast<uint8_t>((a & 0x0f) | ((b & 0x0f) << 4));
    bits |= static_cast<uint32_t>((a >> 4) & 1) << j;
    bits |= static_cast<uint32_t>((b >> 4) & 1) << (j + kQK / 2);
  }
  if (qh) std::memcpy(qh, &bits, 4);
}

// Symmetric blocks (q4_0: levels 16, q5_0: 32): d = max / -(levels / 2).
template <typename Block>
void Symmetric(const float* x, void* dst, int64_t n, int levels) {
  auto* y = static_cast<Block*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = SignedMax(x) / static_cast<float>(-levels / 2);
    const float id = Inverse(d);
    y[i].d = Fp32ToFp16(d);
    for (int j = 0; j < kQK; ++j) q[j] = Level(x[j] * id, levels / 2 + 0.5f, levels - 1);
    if constexpr (requires { y[i].qh; }) {
      Pack(q, y[i].qs, y[i].qh);
    } else {
      Pack(q, y[i].qs, nullptr);
    }
  }
}

// Affine blocks (q4_1: levels 16, q5_1: 32): d = (max - min) / (levels - 1), m = min.
template <typename Block>
void Affine(const float* x, void* dst, int64_t n, int levels) {
  auto* y = static_cast<Block*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float lo, hi;
    MinMax(x, &lo, &hi);
    const float d = (hi - lo) / static_cast<float>(levels - 1);
    const float id = Inverse(d);
    y[i].d = Fp32ToFp16(d);
    y[i].m = Fp32ToFp16(lo);
    for (int j = 0; j < kQK; ++j) q[j] = Level((x[j] - lo) * id, 0.5f, levels - 1);
    if constexpr (requires { y[i].qh; }) {
      Pack(q, y[i].qs, y[i].qh);
    } else {
      Pack(q, y[i].qs, nullptr);
    }
  }
}

}  // namespace

bool CanQuantizeKvRow(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
      return true;
    default:
      return false;
  }
}

void QuantizeKvRow(TensorType type, const float* x, void* dst, int64_t n) {
  switch (type) {
    case TensorType::kQ4_0:
      SPARROW_CHECK(n % kQK == 0);
      return Symmetric<BlockQ4_0>(x, dst, n, 16);
    case TensorType::kQ5_0:
      SPARROW_CHECK(n % kQK == 0);
      return Symmetric<BlockQ5_0>(x, dst, n, 32);
    case TensorType::kQ4_1:
      SPARROW_CHECK(n % kQK == 0);
      return Affine<BlockQ4_1>(x, dst, n, 16);
    case TensorType::kQ5_1:
      SPARROW_CHECK(n % kQK == 0);
      return Affine<BlockQ5_1>(x, dst, n, 32);
    default:
      // The activation quantizers are llama.cpp's from_float for the other types.
      SPARROW_CHECK(CanQuantizeKvRow(type));
      return QuantizeActivationRow(type, x, dst, n);
  }
}

}  // namespace sparrow::kernels
