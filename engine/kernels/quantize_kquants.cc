// Quantizers of the K formats (256-element super-blocks of 16 or 32-element sub-blocks). Each
// sub-block gets a least-squares scale (and min) chosen among a few candidate grids; the
// sub-block scales are then quantized against the super-block scale, and the element values are
// recomputed from the scales actually stored.
#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/quantize_internal.h"

namespace sparrow::kernels::quant {
namespace {

float StoreHalf(float v, uint16_t* out) {
  *out = Fp32ToFp16(v);
  return Fp16ToFp32(*out);
}

// x ~ scale*q + offset with q in [0, nmax] and offset <= 0 (the formats store -offset as an
// unsigned "min"). Returns scale >= 0 and sets *min = -offset >= 0.
float FitAffine(const float* x, int n, int nmax, float* min) {
  const float lo = std::min(0.0f, *std::min_element(x, x + n));
  const float hi = *std::max_element(x, x + n);
  *min = -lo;
  if (hi <= lo) return 0.0f;
  float best_err = std::numeric_limits<float>::infinity(), best_a = (hi - lo) / nmax, best_b = lo;
  for (int step = -4; step <= 4; ++step) {
    const float iscale = (static_cast<float>(nmax) + 0.2f * static_cast<float>(step)) / (hi - lo);
    float sq = 0, sqq = 0, sx = 0, sqx = 0;
    int q[32];
    for (int i = 0; i < n; ++i) {
      q[i] = Clamp(Nearest((x[i] - lo) * iscale), 0, nmax);
      sq += static_cast<float>(q[i]);
      sqq += static_cast<float>(q[i] * q[i]);
      sx += x[i];
      sqx += static_cast<float>(q[i]) * x[i];
    }
    const float det = static_cast<float>(n) * sqq - sq * sq;
    if (det <= 0.0f) continue;
    float a = (static_cast<float>(n) * sqx - sq * sx) / det;
    float b = (sqq * sx - sq * sqx) / det;
    if (b > 0.0f) {
      b = 0.0f;
      a = sqx / sqq;
    }
    if (a <= 0.0f) continue;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = a * static_cast<float>(q[i]) + b - x[i];
      err += diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_a = a;
      best_b = b;
    }
  }
  *min = -best_b;
  return best_a;
}

// x ~ scale*q with q in [-nmax, nmax-1]; the scale is signed (the largest magnitude maps to
// -nmax, which has the larger range).
float FitSymmetric(const float* x, int n, int nmax) {
  const float max = SignedAbsMax(x, n);
  if (max == 0.0f) return 0.0f;
  float best_err = std::numeric_limits<float>::infinity(), best = max / static_cast<float>(-nmax);
  for (int step = -4; step <= 4; ++step) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    float sqq = 0, sqx = 0;
    int q[32];
    for (int i = 0; i < n; ++i) {
      q[i] = Clamp(Nearest(x[i] * iscale), -nmax, nmax - 1);
      sqq += static_cast<float>(q[i] * q[i]);
      sqx += static_cast<float>(q[i]) * x[i];
    }
    if (sqq <= 0.0f) continue;
    const float a = sqx / sqq;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = a * static_cast<float>(q[i]) - x[i];
      err += diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best = a;
    }
  }
  return best;
}

// Quantizes non-negative values v[0..n) to integers in [0, levels-1] against a stored fp16
// super-scale; returns that scale.
float QuantizeScalesUnsigned(const float* v, int n, int levels, uint16_t* d_out, int* q) {
  const float d = StoreHalf(*std::max_element(v, v + n) / static_cast<float>(levels - 1), d_out);
  for (int j = 0; j < n; ++j) q[j] = d > 0.0f ? Clamp(Nearest(v[j] / d), 0, levels - 1) : 0;
  return d;
}

// Signed values to integers in [lo, hi] against a stored fp16 super-scale (the largest
// magnitude maps to `lo`); returns that scale.
float QuantizeScalesSigned(const float* v, int n, int lo, int hi, uint16_t* d_out, int* q) {
  const float d = StoreHalf(SignedAbsMax(v, n) / static_cast<float>(lo), d_out);
  for (int j = 0; j < n; ++j) q[j] = d != 0.0f ? Clamp(Nearest(v[j] / d), lo, hi) : 0;
  return d;
}

// Element values of an affine sub-block given its stored scale and min.
void AffineValues(const float* x, int n, int nmax, float scale, float min, int* L) {
  for (int i = 0; i < n; ++i)
    L[i] = scale > 0.0f ? Clamp(Nearest((x[i] + min) / scale), 0, nmax) : 0;
}

// Element values of a symmetric sub-block, offset by nmax so they are non-negative.
void SymmetricValues(const float* x, int n, int nmax, float scale, int* L) {
  for (int i = 0; i < n; ++i)
    L[i] = (scale != 0.0f ? Clamp(Nearest(x[i] / scale), -nmax, nmax - 1) : 0) + nmax;
}

// The 2-bit layout of Q2_K/Q3_K: element 128n + 32k + l in bits 2k of qs[32n + l].
void Pack2Bit(const int* L, uint8_t* qs) {
  std::memset(qs, 0, kQKK / 4);
  for (int e = 0; e < kQKK; ++e)
    qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((L[e] & 3) << (2 * ((e % 128) / 32)));
}

// Q4_K/Q5_K: fits 8 sub-blocks of 32 and stores d, dmin and the packed 6-bit scales/mins;
// fills L with the element values in [0, nmax].
void EncodeK4(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out, uint8_t* packed,
              int* L) {
  float scales[8], mins[8];
  for (int j = 0; j < 8; ++j) scales[j] = FitAffine(x + 32 * j, 32, nmax, &mins[j]);
  int sc[8], m[8];
  const float d = QuantizeScalesUnsigned(scales, 8, 64, d_out, sc);
  const float dmin = QuantizeScalesUnsigned(mins, 8, 64, dmin_out, m);
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      packed[j] = static_cast<uint8_t>(sc[j]);
      packed[j + 4] = static_cast<uint8_t>(m[j]);
    } else {
      packed[j + 4] = static_cast<uint8_t>((sc[j] & 0xf) | ((m[j] & 0xf) << 4));
      packed[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
    AffineValues(x + 32 * j, 32, nmax, d * static_cast<float>(sc[j]),
                 dmin * static_cast<float>(m[j]), L + 32 * j);
  }
}

}  // namespace

void QuantizeQ2_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float scales[16], mins[16];
    for (int j = 0; j < 16; ++j) scales[j] = FitAffine(x + 16 * j, 16, 3, &mins[j]);
    int sc[16], m[16], L[kQKK];
    const float d = QuantizeScalesUnsigned(scales, 16, 16, &y[i].d, sc);
    const float dmin = QuantizeScalesUnsigned(mins, 16, 16, &y[i].dmin, m);
    for (int j = 0; j < 16; ++j) {
      y[i].scales[j] = static_cast<uint8_t>(sc[j] | (m[j] << 4));
      AffineValues(x + 16 * j, 16, 3, d * static_cast<float>(sc[j]),
                   dmin * static_cast<float>(m[j]), L + 16 * j);
    }
    Pack2Bit(L, y[i].qs);
  }
}

void QuantizeQ3_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = FitSymmetric(x + 16 * j, 16, 4);
    int sc[16], L[kQKK];
    const float d = QuantizeScalesSigned(scales, 16, -32, 31, &y[i].d, sc);
    std::memset(y[i].scales, 0, 12);
    for (int j = 0; j < 16; ++j) {
      const int s = sc[j] + 32;  // 0..63
      y[i].scales[j % 8] |= static_cast<uint8_t>((s & 0xf) << (j < 8 ? 0 : 4));
      y[i].scales[8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
      SymmetricValues(x + 16 * j, 16, 4, d * static_cast<float>(sc[j]), L + 16 * j);
    }
    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    for (int e = 0; e < kQKK; ++e) {
      if (L[e] & 4) y[i].hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    }
    Pack2Bit(L, y[i].qs);
  }
}

void QuantizeQ4_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    int L[kQKK];
    EncodeK4(x, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l)
        y[i].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
  }
}

void QuantizeQ5_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    int L[kQKK];
    EncodeK4(x, 31, &y[i].d, &y[i].dmin, y[i].scales, L);
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    for (int e = 0; e < kQKK; ++e) {
      if (L[e] & 16) y[i].qh[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    }
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[32 * c + l] =
            static_cast<uint8_t>((L[64 * c + l] & 0xf) | ((L[64 * c + 32 + l] & 0xf) << 4));
      }
    }
  }
}

void QuantizeQ6_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = FitSymmetric(x + 16 * j, 16, 32);
    int sc[16], L[kQKK];
    const float d = QuantizeScalesSigned(scales, 16, -128, 127, &y[i].d, sc);
    for (int j = 0; j < 16; ++j) {
      y[i].scales[j] = static_cast<int8_t>(sc[j]);
      SymmetricValues(x + 16 * j, 16, 32, d * static_cast<float>(sc[j]), L + 16 * j);
    }
    std::memset(y[i].ql, 0, sizeof(y[i].ql));
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      y[i].ql[64 * half + 32 * (k & 1) + l] |=
          static_cast<uint8_t>((L[e] & 0xf) << (k < 2 ? 0 : 4));
      y[i].qh[32 * half + l] |= static_cast<uint8_t>((L[e] >> 4) << (2 * k));
    }
  }
}

}  // namespace sparrow::kernels::quant
