#pragma once
// The inner loops of attention over a KV cache whose rows may live anywhere (paged caches):
// rows are passed as pointer arrays plus a float offset into each row. The SIMD variants may
// round differently from the scalar one (fused multiply-adds, a polynomial exp), so results
// agree to a few ulps, not bit for bit. Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>

#include "engine/common/tensor_type.h"

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

// The same over rows stored as `type` (f16, bf16, q8_0: a typed KV cache), `offset` bytes into
// each row. They are built from the variant's own row kernels, so every variant gives the same
// bits as the scalar one:
// scores[j] = scale * VecDot(type, rows[j] + offset, q_act, d), q_act being the query already
// in VecDotType(type) (QuantizeActivationRow), as ggml rounds the query against its cache.
void AttentionScoresTyped(TensorType type, const void* q_act, const uint8_t* const* rows,
                          size_t offset, int64_t n, int64_t d, float scale, float* scores);
// out[i] = sum over j < n, in order of j, of w[j] * row_j[i], one fused multiply-add a term
// (q8_0: the block scale folded into the weight first, fma(w[j] * scale, q, out)), row_j the
// d values stored at rows[j] + offset.
void AttentionMixTyped(TensorType type, const float* w, const uint8_t* const* rows, size_t offset,
                       int64_t n, int64_t d, float* out);

}  // namespace sparrow::kernels
