// The portable reference of the sparse FFN kernels (sparse_ops.h): one fused multiply-add per
// element; a quantized block's scale is folded into the coefficient first (s = a * d, rounded
// once), then y = fma(s, q, y), which saves the SIMD variants a multiply per element.
#include <algorithm>
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

void AccumulateRowsQ4_0(const uint8_t* const* rows, size_t offset, const float* alpha, int64_t n,
                        float* y, int64_t len) {
  for (int64_t k0 = 0; k0 < n; k0 += kQ4_0AccumulateGroup) {
    const int64_t g = std::min<int64_t>(kQ4_0AccumulateGroup, n - k0);
    for (int64_t b = 0; b < len / kQK; ++b) {
      float c[kQ4_0AccumulateGroup];
      float m = 0.0f;
      const BlockQ4_0* blk[kQ4_0AccumulateGroup];
      for (int64_t k = 0; k < g; ++k) {
        blk[k] = reinterpret_cast<const BlockQ4_0*>(rows[k0 + k] + offset) + b;
        c[k] = alpha[k0 + k] * Fp16ToFp32(blk[k]->d);
        m = std::max(m, std::fabs(c[k]));
      }
      if (!(m > 0.0f)) continue;  // nothing to add; y keeps its bits (-0 included)
      const float inv = 32767.0f / m, s = m * (1.0f / 32767.0f);
      int e[kQ4_0AccumulateGroup];
      for (int64_t k = 0; k < g; ++k) e[k] = static_cast<int>(std::nearbyint(c[k] * inv));
      float* yb = y + b * kQK;
      for (int j = 0; j < kQK; ++j) {
        int32_t sum = 0;
        for (int64_t k = 0; k < g; ++k) {
          const uint8_t q = blk[k]->qs[j % (kQK / 2)];
          sum += e[k] * ((j < kQK / 2 ? q & 0xf : q >> 4) - 8);
        }
        yb[j] = std::fma(s, static_cast<float>(sum), yb[j]);
      }
    }
  }
}

}  // namespace sparrow::kernels::scalar
