// The portable attention loops and the dispatching entry points of attention_ops.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/kernels/attention_ops.h"
#include "engine/kernels/dequantize.h"
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

void AttentionScoresTyped(TensorType type, const void* q_act, const uint8_t* const* rows,
                          size_t offset, int64_t n, int64_t d, float scale, float* scores) {
  const VecDotFn dot = ActiveKernelTable().vec_dot[static_cast<int>(type)];
  for (int64_t j = 0; j < n; ++j) scores[j] = scale * dot(rows[j] + offset, q_act, d);
}

void AttentionMixTyped(TensorType type, const float* w, const uint8_t* const* rows, size_t offset,
                       int64_t n, int64_t d, float* out) {
  std::fill(out, out + d, 0.0f);
  const KernelTable& t = ActiveKernelTable();
  const auto id = static_cast<int>(type);
  // The many-rows kernels give axpy_row's bits for these types (Q4_0's rounds its coefficients).
  const bool same_bits =
      type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kQ8_0;
  if (same_bits && t.accumulate_rows[id] != nullptr && d % 32 == 0) {
    t.accumulate_rows[id](rows, offset, w, n, out, d);
    return;
  }
  if (t.axpy_row[id] != nullptr) {
    for (int64_t j = 0; j < n; ++j) t.axpy_row[id](w[j], rows[j] + offset, out, d);
    return;
  }
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(d));
  for (int64_t j = 0; j < n; ++j) {
    DequantizeRow(type, rows[j] + offset, row.data(), d);
    t.axpy(w[j], row.data(), out, d);
  }
}

}  // namespace sparrow::kernels
