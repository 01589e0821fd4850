#pragma once
// The inner loops of attention over a KV cache whose rows may live anywhere (paged caches):
// rows are passed as pointer arrays plus a float offset into each row. The SIMD variants may
// round differently from the scalar one (fused multiply-adds, a polynomial exp), so results
// agree to a few ulps, not bit for bit. Pure functions, thread-safe.
#include <cstdint>

namespace sparrow::kernels {

// scores[j] = scale * dot(q[0..d), rows[j] + offset) for j < n.
void AttentionScores(const float* q, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                     float scale, float* scores);

// In place x[j] = exp(x[j] - max(x)) for j < n (n >= 1); returns their sum, accumulated in
// double as ggml_soft_max does.
double ExpMinusMax(float* x, int64_t n);

// out[i] = sum over j < n of w[j] * (rows[j] + offset)[i], for i < d.
void AttentionMix(const float* w, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                  float* out);

}  // namespace sparrow::kernels
