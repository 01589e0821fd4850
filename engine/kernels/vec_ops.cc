#include "engine/kernels/vec_ops.h"

#include <algorithm>
#include <cmath>

namespace sparrow::kernels {
namespace {

inline float SiluOne(float v) {
  return v / (1.0f + std::exp(-v));
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
