#pragma once
// Internal: the per-format weight quantizers behind QuantizeRow, and small helpers they share.
// `n` is a multiple of the block size (checked by QuantizeRow). Pure functions.
#include <cmath>
#include <cstdint>

namespace sparrow::kernels::quant {

// Nearest integer, halves away from zero (weights only: any consistent rounding will do).
inline int Nearest(float v) {
  return static_cast<int>(std::lround(v));
}

inline int Clamp(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// The element of largest magnitude, with its sign (the first one on ties); 0 for all-zero input.
inline float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

void QuantizeQ4_0(const float* x, void* dst, int64_t n);
void QuantizeQ4_1(const float* x, void* dst, int64_t n);
void QuantizeQ5_0(const float* x, void* dst, int64_t n);
void QuantizeQ5_1(const float* x, void* dst, int64_t n);
void QuantizeQ8_0(const float* x, void* dst, int64_t n);
void QuantizeQ2_K(const float* x, void* dst, int64_t n);
void QuantizeQ3_K(const float* x, void* dst, int64_t n);
void QuantizeQ4_K(const float* x, void* dst, int64_t n);
void QuantizeQ5_K(const float* x, void* dst, int64_t n);
void QuantizeQ6_K(const float* x, void* dst, int64_t n);

}  // namespace sparrow::kernels::quant
