// Portable activation quantizers. They reproduce what llama.cpp's x86 build does to the
// activations before a quantized dot product (quantize_row_q8_0/q8_1 AVX2 code, which rounds
// half to even and uses id = 127/amax; quantize_row_q8_K_ref; F16C conversion).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels::scalar {

void QuantizeActF32(const float* x, void* dst, int64_t n) {
  std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
}

void QuantizeActF16(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToFp16(x[i]);
}

void QuantizeActBF16(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToBf16(x[i]);
}

namespace {

// Shared by Q8_0 and Q8_1: the quantized values of one block; returns d (before fp16 rounding).
float QuantizeBlock32(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(RoundHalfEven(x[j] * id));
  return d;
}

}  // namespace

void QuantizeActQ8_0(const float* x, void* dst, int64_t n) {
  SPARROW_CHECK(n % kQK == 0);
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    y[i].d = Fp32ToFp16(QuantizeBlock32(x + i * kQK, y[i].qs));
  }
}

void QuantizeActQ8_1(const float* x, void* dst, int64_t n) {
  SPARROW_CHECK(n % kQK == 0);
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = QuantizeBlock32(x + i * kQK, y[i].qs);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += y[i].qs[j];
    y[i].d = Fp32ToFp16(d);
    y[i].s = Fp32ToFp16(d * static_cast<float>(sum));
  }
}

void QuantizeActQ8_K(const float* x, void* dst, int64_t n) {
  SPARROW_CHECK(n % kQKK == 0);
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    // The signed value of largest magnitude; the first one wins ties.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQKK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQKK; ++j)
      y[i].qs[j] = static_cast<int8_t>(std::min(127, RoundHalfEven(iscale * x[j])));
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[i].qs[16 * g + j];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace sparrow::kernels::scalar
