// Portable dot products of the float types and the 32-element block types (ggml's
// ggml_vec_dot_f16, ggml_vec_dot_q4_0_q8_0, ...), in the fixed accumulation order of vec_dot.h.
#include <cmath>
#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels::scalar {

float SumLanes(float* lanes, int n) {
  for (; n > kBlockLanes; n /= 2) {
    for (int i = 0; i < n / 2; ++i) lanes[i] += lanes[i + n / 2];
  }
  const float t0 = lanes[0] + lanes[4], t1 = lanes[1] + lanes[5];
  const float t2 = lanes[2] + lanes[6], t3 = lanes[3] + lanes[7];
  return (t0 + t2) + (t1 + t3);
}

namespace {

// Element i of a float row goes to lane i % 32 with one fused multiply-add (a single rounding,
// the same on every ISA: FMA is exactly specified). `load` widens one stored element to f32.
template <typename T, typename Load>
float DotFloatLanes(const T* x, const T* y, int64_t n, Load load) {
  float lanes[kFloatLanes] = {};
  int64_t i = 0;
  for (; i + kFloatLanes <= n; i += kFloatLanes) {
    for (int l = 0; l < kFloatLanes; ++l)
      lanes[l] = std::fma(load(x[i + l]), load(y[i + l]), lanes[l]);
  }
  for (int l = 0; i < n; ++i, ++l) lanes[l] = std::fma(load(x[i]), load(y[i]), lanes[l]);
  return SumLanes(lanes, kFloatLanes);
}

// The 5-bit value of element e of a Q5 block.
int Q5Value(const uint8_t* qs, uint32_t qh, int e) {
  const int low = e < kQK / 2 ? (qs[e] & 0xf) : (qs[e - kQK / 2] >> 4);
  return low | static_cast<int>(((qh >> e) & 1u) << 4);
}

// The 4-bit value of element e of a Q4 block.
int Q4Value(const uint8_t* qs, int e) {
  return e < kQK / 2 ? (qs[e] & 0xf) : (qs[e - kQK / 2] >> 4);
}

template <typename BX, typename BY, float (*Term)(const BX&, const BY&)>
float DotBlocks(const void* w, const void* act, int64_t n) {
  SPARROW_CHECK(n % kQK == 0);
  const auto* x = static_cast<const BX*>(w);
  const auto* y = static_cast<const BY*>(act);
  float lanes[kBlockLanes] = {};
  for (int64_t b = 0; b < n / kQK; ++b) lanes[b % kBlockLanes] += Term(x[b], y[b]);
  return SumLanes(lanes, kBlockLanes);
}

}  // namespace

float BlockTermQ4_0(const BlockQ4_0& x, const BlockQ8_0& y) {
  int sum = 0;
  for (int e = 0; e < kQK; ++e) sum += (Q4Value(x.qs, e) - 8) * y.qs[e];
  return (Fp16ToFp32(x.d) * Fp16ToFp32(y.d)) * static_cast<float>(sum);
}

float BlockTermQ4_1(const BlockQ4_1& x, const BlockQ8_1& y) {
  int sum = 0;
  for (int e = 0; e < kQK; ++e) sum += Q4Value(x.qs, e) * y.qs[e];
  const float scaled = (Fp16ToFp32(x.d) * Fp16ToFp32(y.d)) * static_cast<float>(sum);
  const float offset = Fp16ToFp32(x.m) * Fp16ToFp32(y.s);
  return scaled + offset;
}

float BlockTermQ5_0(const BlockQ5_0& x, const BlockQ8_0& y) {
  uint32_t qh;
  std::memcpy(&qh, x.qh, 4);
  int sum = 0;
  for (int e = 0; e < kQK; ++e) sum += (Q5Value(x.qs, qh, e) - 16) * y.qs[e];
  return (Fp16ToFp32(x.d) * Fp16ToFp32(y.d)) * static_cast<float>(sum);
}

float BlockTermQ5_1(const BlockQ5_1& x, const BlockQ8_1& y) {
  uint32_t qh;
  std::memcpy(&qh, x.qh, 4);
  int sum = 0;
  for (int e = 0; e < kQK; ++e) sum += Q5Value(x.qs, qh, e) * y.qs[e];
  const float scaled = (Fp16ToFp32(x.d) * Fp16ToFp32(y.d)) * static_cast<float>(sum);
  const float offset = Fp16ToFp32(x.m) * Fp16ToFp32(y.s);
  return scaled + offset;
}

float BlockTermQ8_0(const BlockQ8_0& x, const BlockQ8_0& y) {
  int sum = 0;
  for (int e = 0; e < kQK; ++e) sum += x.qs[e] * y.qs[e];
  return (Fp16ToFp32(x.d) * Fp16ToFp32(y.d)) * static_cast<float>(sum);
}

float DotF32(const void* w, const void* act, int64_t n) {
  return DotFloatLanes(static_cast<const float*>(w), static_cast<const float*>(act), n,
                       [](float v) { return v; });
}

float DotF16(const void* w, const void* act, int64_t n) {
  return DotFloatLanes(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(act), n,
                       [](uint16_t h) { return Fp16ToFp32(h); });
}

float DotBF16(const void* w, const void* act, int64_t n) {
  return DotFloatLanes(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(act), n,
                       [](uint16_t h) { return Bf16ToFp32(h); });
}

float DotQ4_0(const void* w, const void* act, int64_t n) {
  return DotBlocks<BlockQ4_0, BlockQ8_0, BlockTermQ4_0>(w, act, n);
}
float DotQ4_1(const void* w, const void* act, int64_t n) {
  return DotBlocks<BlockQ4_1, BlockQ8_1, BlockTermQ4_1>(w, act, n);
}
float DotQ5_0(const void* w, const void* act, int64_t n) {
  return DotBlocks<BlockQ5_0, BlockQ8_0, BlockTermQ5_0>(w, act, n);
}
float DotQ5_1(const void* w, const void* act, int64_t n) {
  return DotBlocks<BlockQ5_1, BlockQ8_1, BlockTermQ5_1>(w, act, n);
}
float DotQ8_0(const void* w, const void* act, int64_t n) {
  return DotBlocks<BlockQ8_0, BlockQ8_0, BlockTermQ8_0>(w, act, n);
}

}  // namespace sparrow::kernels::scalar
