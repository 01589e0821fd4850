#include "engine/kernels/vec_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/kernels/fp16.h"

namespace sparrow::kernels {
namespace {

inline float SiluOne(float v) {
  return v / (1.0f + std::exp(-v));
}

// GELU, tanh approximation, of every fp16 value, as fp16: ggml computes GELU through this table
// (GGML_GELU_FP16), which rounds the input and the result to half precision.
const std::vector<uint16_t>& GeluTable() {
  static const std::vector<uint16_t> table = [] {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoefA = 0.044715f;
    std::vector<uint16_t> t(1 << 16);
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float x = Fp16ToFp32(static_cast<uint16_t>(i));
      t[i] = Fp32ToFp16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x))));
    }
    return t;
  }();
  return table;
}

}  // namespace

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void LayerNorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  double sum2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    out[i] = d;
    sum2 += static_cast<double>(d * d);
  }
  const float variance = static_cast<float>(sum2 / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(variance + eps);
  for (int64_t i = 0; i < n; ++i) out[i] *= scale;
  if (w) {
    for (int64_t i = 0; i < n; ++i) out[i] *= w[i];
  }
  if (b) {
    for (int64_t i = 0; i < n; ++i) out[i] += b[i];
  }
}

void AddInPlace(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

void ScaleInPlace(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void Silu(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluOne(x[i]);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluOne(gate[i]) * up[i];
}

void Gelu(const float* x, int64_t n, float* out) {
  const std::vector<uint16_t>& table = GeluTable();
  for (int64_t i = 0; i < n; ++i) {
    const float g = x[i];
    out[i] = g <= -10.0f ? 0.0f : g >= 10.0f ? g : Fp16ToFp32(table[Fp32ToFp16(g)]);
  }
}

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  const std::vector<uint16_t>& table = GeluTable();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    if (g <= -10.0f) {
      out[i] = 0.0f;
    } else if (g >= 10.0f) {
      out[i] = g * up[i];
    } else {
      out[i] = Fp16ToFp32(table[Fp32ToFp16(g)]) * up[i];
    }
  }
}

void SoftmaxInPlace(float* x, int64_t n) {
  if (n <= 0) return;
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += static_cast<double>(x[i]);
  }
  ScaleInPlace(x, n, static_cast<float>(1.0 / sum));
}

}  // namespace sparrow::kernels
