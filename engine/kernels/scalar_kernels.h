#pragma once
// Internal: the portable kernels (the reference every SIMD variant must reproduce bit for bit)
// and the per-block helpers the SIMD variants reuse for their tails. Pure functions.
#include <bit>
#include <cstdint>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels::scalar {

// Round half to even, for |v| < 2^22 (the activation quantizers only see |v| <= 127.x):
// adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
SPARROW_KERNEL_INLINE int RoundHalfEven(float v) {
  const float t = v + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(t) & 0x7fffffu) - 0x400000;
}

// Lanes used by the fixed-order float accumulation (see vec_dot.h).
inline constexpr int kBlockLanes = 8;
inline constexpr int kFloatLanes = 32;

// Sums `n` (a power of two >= 8) lanes in the fixed tree every variant uses: fold the upper
// half onto the lower half until 8 remain, then ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
// Modifies `lanes`.
float SumLanes(float* lanes, int n);

// Activation quantizers.
void QuantizeActF32(const float* x, void* dst, int64_t n);
void QuantizeActF16(const float* x, void* dst, int64_t n);
void QuantizeActBF16(const float* x, void* dst, int64_t n);
void QuantizeActQ8_0(const float* x, void* dst, int64_t n);
void QuantizeActQ8_1(const float* x, void* dst, int64_t n);
void QuantizeActQ8_K(const float* x, void* dst, int64_t n);

// Float term of one 32-element block pair, added into lane (block index % 8).
float BlockTermQ4_0(const BlockQ4_0& x, const BlockQ8_0& y);
float BlockTermQ4_1(const BlockQ4_1& x, const BlockQ8_1& y);
float BlockTermQ5_0(const BlockQ5_0& x, const BlockQ8_0& y);
float BlockTermQ5_1(const BlockQ5_1& x, const BlockQ8_1& y);
float BlockTermQ8_0(const BlockQ8_0& x, const BlockQ8_0& y);

// Row dot products.
float DotF32(const void* w, const void* act, int64_t n);
float DotF16(const void* w, const void* act, int64_t n);
float DotBF16(const void* w, const void* act, int64_t n);
float DotQ4_0(const void* w, const void* act, int64_t n);
float DotQ4_1(const void* w, const void* act, int64_t n);
float DotQ5_0(const void* w, const void* act, int64_t n);
float DotQ5_1(const void* w, const void* act, int64_t n);
float DotQ8_0(const void* w, const void* act, int64_t n);
float DotQ2_K(const void* w, const void* act, int64_t n);
float DotQ3_K(const void* w, const void* act, int64_t n);
float DotQ4_K(const void* w, const void* act, int64_t n);
float DotQ5_K(const void* w, const void* act, int64_t n);
float DotQ6_K(const void* w, const void* act, int64_t n);

// Attention loops (attention_ops.h).
void AttentionScores(const float* q, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                     float scale, float* scores);
double ExpMinusMax(float* x, int64_t n);
void AttentionMix(const float* w, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                  float* out);

// Sparse FFN accumulation (sparse_ops.h).
void Axpy(float a, const float* x, float* y, int64_t n);
void AxpyRowF32(float a, const void* row, float* y, int64_t n);
void AxpyRowF16(float a, const void* row, float* y, int64_t n);
void AxpyRowQ4_0(float a, const void* row, float* y, int64_t n);
void AxpyRowQ8_0(float a, const void* row, float* y, int64_t n);
// Q4_0 down rows accumulated through integers (the contract in sparse_ops.h), in groups of
// kQ4_0AccumulateGroup rows.
inline constexpr int kQ4_0AccumulateGroup = 16;
void AccumulateRowsQ4_0(const uint8_t* const* rows, size_t offset, const float* alpha, int64_t n,
                        float* y, int64_t len);

// Fills every entry of `t` with the portable kernels.
void InstallScalarKernels(KernelTable* t);

}  // namespace sparrow::kernels::scalar
