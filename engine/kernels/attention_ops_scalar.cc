// The portable attention loops and the dispatching entry points of attention_ops.h.
#include <algorithm>
#include <cmath>

#include "engine/kernels/attention_ops.h"
#include "engine/kernels/scalar_kernels.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {
namespace scalar {

void AttentionScores(const float* q, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                     float scale, float* scores) {
  for (int64_t j = 0; j < n; ++j) {
    const float* k = rows[j] + offset;
    float s = 0.0f;
    for (int64_t i = 0; i < d; ++i) s += q[i] * k[i];
    scores[j] = s * scale;
  }
}

double ExpMinusMax(float* x, int64_t n) {
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - max);
    sum += x[j];
  }
  return sum;
}

void AttentionMix(const float* w, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                  float* out) {
  std::fill(out, out + d, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float* v = rows[j] + offset;
    for (int64_t i = 0; i < d; ++i) out[i] += w[j] * v[i];
  }
}

}  // namespace scalar

void AttentionScores(const float* q, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                     float scale, float* scores) {
  ActiveKernelTable().attn_scores(q, rows, offset, n, d, scale, scores);
}

double ExpMinusMax(float* x, int64_t n) {
  return ActiveKernelTable().exp_minus_max(x, n);
}

void AttentionMix(const float* w, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                  float* out) {
  ActiveKernelTable().attn_mix(w, rows, offset, n, d, out);
}

}  // namespace sparrow::kernels
