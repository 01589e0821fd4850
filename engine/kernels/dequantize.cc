#include "engine/kernels/dequantize.h"

#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"

namespace sparrow::kernels {
namespace {

// Each function decodes `nb` blocks; the float expressions follow ggml's dequantize_row_*.

void DequantQ4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0xf) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantQ4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    const float m = Fp16ToFp32(x[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0xf) * d + m;
      y[j + kQK / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

// The 5-bit value of element e of a Q5 block.
int Q5Value(const uint8_t* qs, uint32_t qh, int e) {
  const int low = e < kQK / 2 ? (qs[e] & 0xf) : (qs[e - kQK / 2] >> 4);
  return low | static_cast<int>(((qh >> e) & 1u) << 4);
}

void DequantQ5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int e = 0; e < kQK; ++e) y[e] = static_cast<float>(Q5Value(x[i].qs, qh, e) - 16) * d;
  }
}

void DequantQ5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    const float m = Fp16ToFp32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int e = 0; e < kQK; ++e) y[e] = static_cast<float>(Q5Value(x[i].qs, qh, e)) * d + m;
  }
}

void DequantQ8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    for (int e = 0; e < kQK; ++e) y[e] = static_cast<float>(x[i].qs[e]) * d;
  }
}

void DequantQ8_1(const BlockQ8_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = Fp16ToFp32(x[i].d);
    for (int e = 0; e < kQK; ++e) y[e] = static_cast<float>(x[i].qs[e]) * d;
  }
}

void DequantQ2_K(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const float d = Fp16ToFp32(x[i].d);
    const float dmin = Fp16ToFp32(x[i].dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = (x[i].qs[32 * n + l] >> (2 * k)) & 3;
      const uint8_t sc = x[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xf);
      const float ml = dmin * static_cast<float>(sc >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void DequantQ3_K(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const float d = Fp16ToFp32(x[i].d);
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, k = (e % 128) / 32, l = e % 32;
      int q = (x[i].qs[32 * n + l] >> (2 * k)) & 3;
      if (!((x[i].hmask[l] >> (e / 32)) & 1)) q -= 4;
      const float dl = d * static_cast<float>(Q3KScale(x[i].scales, e / 16));
      y[e] = dl * static_cast<float>(q);
    }
  }
}

void DequantQ4_K(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const float d = Fp16ToFp32(x[i].d);
    const float dmin = Fp16ToFp32(x[i].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      UnpackScaleMinK4(x[i].scales, j, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = x[i].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l)
        y[32 * j + l] = dl * static_cast<float>((q[l] >> shift) & 0xf) - ml;
    }
  }
}

void DequantQ5_K(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const float d = Fp16ToFp32(x[i].d);
    const float dmin = Fp16ToFp32(x[i].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      UnpackScaleMinK4(x[i].scales, j, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = x[i].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xf) | (((x[i].qh[l] >> j) & 1) << 4);
        y[32 * j + l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

void DequantQ6_K(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    const float d = Fp16ToFp32(x[i].d);
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t ql = x[i].ql[64 * n + 32 * (k & 1) + l];
      const int low = k < 2 ? (ql & 0xf) : (ql >> 4);
      const int high = (x[i].qh[32 * n + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      y[e] = d * static_cast<float>(x[i].scales[e / 16]) * static_cast<float>(q);
    }
  }
}

void DequantQ8_K(const BlockQ8_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    for (int e = 0; e < kQKK; ++e) y[e] = x[i].d * static_cast<float>(x[i].qs[e]);
  }
}

}  // namespace

size_t RowBytes(TensorType type, int64_t n) {
  const auto traits = GetTensorTypeTraits(type);
  SPARROW_CHECK(traits.has_value());
  SPARROW_CHECK(n >= 0 && n % traits->block_elems == 0);
  return static_cast<size_t>(n / traits->block_elems) * traits->block_bytes;
}

bool CanDequantize(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ8_0:
    case TensorType::kQ8_1:
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kQ8_K:
      return true;
    default:
      return false;
  }
}

void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n) {
  SPARROW_CHECK(CanDequantize(type));
  (void)RowBytes(type, n);  // checks n against the block size
  const int64_t nb32 = n / kQK;
  const int64_t nbk = n / kQKK;
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
      return;
    }
    case TensorType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(h[i]);
      return;
    }
    case TensorType::kQ4_0:
      return DequantQ4_0(static_cast<const BlockQ4_0*>(src), dst, nb32);
    case TensorType::kQ4_1:
      return DequantQ4_1(static_cast<const BlockQ4_1*>(src), dst, nb32);
    case TensorType::kQ5_0:
      return DequantQ5_0(static_cast<const BlockQ5_0*>(src), dst, nb32);
    case TensorType::kQ5_1:
      return DequantQ5_1(static_cast<const BlockQ5_1*>(src), dst, nb32);
    case TensorType::kQ8_0:
      return DequantQ8_0(static_cast<const BlockQ8_0*>(src), dst, nb32);
    case TensorType::kQ8_1:
      return DequantQ8_1(static_cast<const BlockQ8_1*>(src), dst, nb32);
    case TensorType::kQ2_K:
      return DequantQ2_K(static_cast<const BlockQ2_K*>(src), dst, nbk);
    case TensorType::kQ3_K:
      return DequantQ3_K(static_cast<const BlockQ3_K*>(src), dst, nbk);
    case TensorType::kQ4_K:
      return DequantQ4_K(static_cast<const BlockQ4_K*>(src), dst, nbk);
    case TensorType::kQ5_K:
      return DequantQ5_K(static_cast<const BlockQ5_K*>(src), dst, nbk);
    case TensorType::kQ6_K:
      return DequantQ6_K(static_cast<const BlockQ6_K*>(src), dst, nbk);
    case TensorType::kQ8_K:
      return DequantQ8_K(static_cast<const BlockQ8_K*>(src), dst, nbk);
    default:
      SPARROW_CHECK(false);
  }
}

}  // namespace sparrow::kernels
