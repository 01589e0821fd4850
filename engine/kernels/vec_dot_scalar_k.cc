// Portable K-quant dot products against Q8_K activations (ggml_vec_dot_q*_K_q8_K). Per
// super-block the integer sums are exact; the float terms d*isum - dmin*isum_min are added in
// super-block order.
#include "engine/common/check.h"
#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels::scalar {
namespace {

// Sum over one sub-block of `len` elements of q[e] * a[e].
int SubDot(const int8_t* q, const int8_t* a, int len) {
  int s = 0;
  for (int e = 0; e < len; ++e) s += q[e] * a[e];
  return s;
}

// Adds one super-block's float term: d*isum - dmin*isum_min, with d and dmin already combined
// with the activation scale.
float Term(float d, int isum, float dmin, int isum_min) {
  const float scaled = d * static_cast<float>(isum);
  const float offset = dmin * static_cast<float>(isum_min);
  return scaled - offset;
}

// The 2-bit field of element e of a Q2_K/Q3_K qs array.
int Low2(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

template <typename Block, float (*SuperBlock)(const Block&, const BlockQ8_K&)>
float DotSuperBlocks(const void* w, const void* act, int64_t n) {
  SPARROW_CHECK(n % kQKK == 0);
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQKK; ++i) sum += SuperBlock(x[i], y[i]);
  return sum;
}

float SuperQ2_K(const BlockQ2_K& x, const BlockQ8_K& y) {
  int8_t q[kQKK];
  for (int e = 0; e < kQKK; ++e) q[e] = static_cast<int8_t>(Low2(x.qs, e));
  int isum = 0, isum_min = 0;
  for (int j = 0; j < 16; ++j) {
    isum += (x.scales[j] & 0xf) * SubDot(q + 16 * j, y.qs + 16 * j, 16);
    isum_min += (x.scales[j] >> 4) * y.bsums[j];
  }
  return Term(y.d * Fp16ToFp32(x.d), isum, y.d * Fp16ToFp32(x.dmin), isum_min);
}

float SuperQ3_K(const BlockQ3_K& x, const BlockQ8_K& y) {
  int8_t q[kQKK];
  for (int e = 0; e < kQKK; ++e) {
    const int high = (x.hmask[e % 32] >> (e / 32)) & 1;
    q[e] = static_cast<int8_t>(Low2(x.qs, e) - (high ? 0 : 4));
  }
  int isum = 0;
  for (int j = 0; j < 16; ++j)
    isum += Q3KScale(x.scales, j) * SubDot(q + 16 * j, y.qs + 16 * j, 16);
  return Term(Fp16ToFp32(x.d) * y.d, isum, 0.0f, 0);
}

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; `q` holds the unsigned values.
float TermK4(const uint8_t* scales, const int8_t* q, uint16_t d, uint16_t dmin,
             const BlockQ8_K& y) {
  int isum = 0, isum_min = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(scales, j, &sc, &m);
    isum += sc * SubDot(q + 32 * j, y.qs + 32 * j, 32);
    isum_min += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
  }
  return Term(Fp16ToFp32(d) * y.d, isum, Fp16ToFp32(dmin) * y.d, isum_min);
}

float SuperQ4_K(const BlockQ4_K& x, const BlockQ8_K& y) {
  int8_t q[kQKK];
  for (int e = 0; e < kQKK; ++e) {
    const uint8_t b = x.qs[32 * (e / 64) + e % 32];
    q[e] = static_cast<int8_t>(((e / 32) % 2) ? (b >> 4) : (b & 0xf));
  }
  return TermK4(x.scales, q, x.d, x.dmin, y);
}

float SuperQ5_K(const BlockQ5_K& x, const BlockQ8_K& y) {
  int8_t q[kQKK];
  for (int e = 0; e < kQKK; ++e) {
    const uint8_t b = x.qs[32 * (e / 64) + e % 32];
    const int low = ((e / 32) % 2) ? (b >> 4) : (b & 0xf);
    q[e] = static_cast<int8_t>(low | (((x.qh[e % 32] >> (e / 32)) & 1) << 4));
  }
  return TermK4(x.scales, q, x.d, x.dmin, y);
}

float SuperQ6_K(const BlockQ6_K& x, const BlockQ8_K& y) {
  int8_t q[kQKK];
  for (int e = 0; e < kQKK; ++e) {
    const int n = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t b = x.ql[64 * n + 32 * (k & 1) + l];
    const int low = k < 2 ? (b & 0xf) : (b >> 4);
    const int high = (x.qh[32 * n + l] >> (2 * k)) & 3;
    q[e] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
  int isum = 0;
  for (int j = 0; j < 16; ++j) isum += x.scales[j] * SubDot(q + 16 * j, y.qs + 16 * j, 16);
  return Term(Fp16ToFp32(x.d) * y.d, isum, 0.0f, 0);
}

}  // namespace

float DotQ2_K(const void* w, const void* act, int64_t n) {
  return DotSuperBlocks<BlockQ2_K, SuperQ2_K>(w, act, n);
}
float DotQ3_K(const void* w, const void* act, int64_t n) {
  return DotSuperBlocks<BlockQ3_K, SuperQ3_K>(w, act, n);
}
float DotQ4_K(const void* w, const void* act, int64_t n) {
  return DotSuperBlocks<BlockQ4_K, SuperQ4_K>(w, act, n);
}
float DotQ5_K(const void* w, const void* act, int64_t n) {
  return DotSuperBlocks<BlockQ5_K, SuperQ5_K>(w, act, n);
}
float DotQ6_K(const void* w, const void* act, int64_t n) {
  return DotSuperBlocks<BlockQ6_K, SuperQ6_K>(w, act, n);
}

}  // namespace sparrow::kernels::scalar
