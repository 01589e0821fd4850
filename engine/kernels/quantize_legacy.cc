// QuantizeRow, and the quantizers of the plain and 32-element block formats. Each block is
// encoded from the fp16-rounded scale actually stored, so the rounding of the scale does not
// add to the error of every element.
#include <algorithm>
#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/quantize_internal.h"
#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels {
namespace quant {
namespace {

// Stores `v` as fp16 and returns the value that was stored.
float StoreHalf(float v, uint16_t* out) {
  *out = Fp32ToFp16(v);
  return Fp16ToFp32(*out);
}

float Inverse(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// Symmetric 32-element block: values q in [0, 2*half) with x ~ d*(q - half).
void SymmetricBlock(const float* x, int half, uint16_t* d_out, int* q) {
  const float d = StoreHalf(SignedAbsMax(x, kQK) / static_cast<float>(-half), d_out);
  const float id = Inverse(d);
  for (int j = 0; j < kQK; ++j) q[j] = Clamp(Nearest(x[j] * id) + half, 0, 2 * half - 1);
}

// Affine 32-element block: values q in [0, levels) with x ~ d*q + m.
void AffineBlock(const float* x, int levels, uint16_t* d_out, uint16_t* m_out, int* q) {
  const float lo = *std::min_element(x, x + kQK);
  const float hi = *std::max_element(x, x + kQK);
  const float d = StoreHalf((hi - lo) / static_cast<float>(levels - 1), d_out);
  const float m = StoreHalf(lo, m_out);
  const float id = Inverse(d);
  for (int j = 0; j < kQK; ++j) q[j] = Clamp(Nearest((x[j] - m) * id), 0, levels - 1);
}

void PackNibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xf) | ((q[j + kQK / 2] & 0xf) << 4));
}

void PackHighBits(const int* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

}  // namespace

void QuantizeQ4_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_0*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    SymmetricBlock(x, 8, &y[i].d, q);
    PackNibbles(q, y[i].qs);
  }
}

void QuantizeQ4_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_1*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    AffineBlock(x, 16, &y[i].d, &y[i].m, q);
    PackNibbles(q, y[i].qs);
  }
}

void QuantizeQ5_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_0*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    SymmetricBlock(x, 16, &y[i].d, q);
    PackNibbles(q, y[i].qs);
    PackHighBits(q, y[i].qh);
  }
}

void QuantizeQ5_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_1*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    AffineBlock(x, 32, &y[i].d, &y[i].m, q);
    PackNibbles(q, y[i].qs);
    PackHighBits(q, y[i].qh);
  }
}

void QuantizeQ8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = Inverse(StoreHalf(amax / 127.0f, &y[i].d));
    for (int j = 0; j < kQK; ++j)
      y[i].qs[j] = static_cast<int8_t>(Clamp(Nearest(x[j] * id), -127, 127));
  }
}

}  // namespace quant

bool CanQuantize(TensorType type) {
  return CanDequantize(type);
}

void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n) {
  SPARROW_CHECK(CanQuantize(type));
  (void)RowBytes(type, n);  // checks n against the block size
  switch (type) {
    case TensorType::kF32:
      return scalar::QuantizeActF32(src, dst, n);
    case TensorType::kF16:
      return scalar::QuantizeActF16(src, dst, n);
    case TensorType::kBF16:
      return scalar::QuantizeActBF16(src, dst, n);
    case TensorType::kQ4_0:
      return quant::QuantizeQ4_0(src, dst, n);
    case TensorType::kQ4_1:
      return quant::QuantizeQ4_1(src, dst, n);
    case TensorType::kQ5_0:
      return quant::QuantizeQ5_0(src, dst, n);
    case TensorType::kQ5_1:
      return quant::QuantizeQ5_1(src, dst, n);
    case TensorType::kQ8_0:
      return quant::QuantizeQ8_0(src, dst, n);
    case TensorType::kQ8_1:
      return scalar::QuantizeActQ8_1(src, dst, n);
    case TensorType::kQ2_K:
      return quant::QuantizeQ2_K(src, dst, n);
    case TensorType::kQ3_K:
      return quant::QuantizeQ3_K(src, dst, n);
    case TensorType::kQ4_K:
      return quant::QuantizeQ4_K(src, dst, n);
    case TensorType::kQ5_K:
      return quant::QuantizeQ5_K(src, dst, n);
    case TensorType::kQ6_K:
      return quant::QuantizeQ6_K(src, dst, n);
    case TensorType::kQ8_K:
      return scalar::QuantizeActQ8_K(src, dst, n);
    default:
      SPARROW_CHECK(false);
  }
}

}  // namespace sparrow::kernels
