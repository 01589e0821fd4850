// The portable reference of the sparse FFN kernels (sparse_ops.h): one fused multiply-add per
// element; a quantized block's scale is folded into the coefficient first (s = a * d, rounded
// once), then y = fma(s, q, y), which saves the SIMD variants a multiply per element.
#include <cmath>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels::scalar {

void Axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

void AxpyRowF32(float a, const void* row, float* y, int64_t n) {
  Axpy(a, static_cast<const float*>(row), y, n);
}

void AxpyRowF16(float a, const void* row, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(row);
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, Fp16ToFp32(x[i]), y[i]);
}

void AxpyRowQ4_0(float a, const void* row, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(row);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float s = a * Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = std::fma(s, static_cast<float>((b[i].qs[j] & 0xf) - 8), y[j]);
      y[j + kQK / 2] = std::fma(s, static_cast<float>((b[i].qs[j] >> 4) - 8), y[j + kQK / 2]);
    }
  }
}

void AxpyRowQ8_0(float a, const void* row, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(row);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float s = a * Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = std::fma(s, static_cast<float>(b[i].qs[j]), y[j]);
  }
}

}  // namespace sparrow::kernels::scalar
