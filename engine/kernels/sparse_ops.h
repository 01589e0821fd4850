#pragma once
// The accumulation side of a sparse feed-forward: chosen rows scaled by per-token coefficients
// (the active neurons' down rows). The other side, dot products of chosen rows, is MatMulRows
// (matmul.h). Results do not depend on the thread count or the instruction-set variant.
// Thread-safe (as MatMul).
#include <cstdint>

#include "engine/kernels/matmul.h"

namespace sparrow::kernels {

class ThreadPool;

// For t < n_tokens and j < w.cols: out[t*ldo + j] += sum over k < n, in order of k, of
// alpha[t*lda + rows[k]] * w[rows[k], j], one fused multiply-add per term (for Q4_0/Q8_0 rows
// the block scale is folded into the coefficient first: fma(alpha * d, q, out)); zero
// coefficients are skipped. `w` holds one row per neuron (a transposed down projection).
// Q4_0 rows go through integers instead: the rows with a nonzero coefficient, in order of k,
// form groups of 16; for each group and 32-column block, with c_k = alpha_k * d_k (d_k the
// row's block scale), m = max |c_k| (a block with m = 0 is skipped), e_k = nearbyint(c_k *
// (32767 / m)) and s = m * (1 / 32767): out[j] = fma(s, float(sum over k of e_k * (q_kj - 8)),
// out[j]). The coefficients are rounded to 16 bits per group and block (8 bits cost PowerInfer
// parity: its Q4_0 file's logits moved past the 5% tolerance); the products are exact.
void AccumulateRows(const WeightMatrix& w, const int32_t* rows, int64_t n, const float* alpha,
                    int64_t lda, int64_t n_tokens, float* out, int64_t ldo, ThreadPool* pool);

// True for the row types AccumulateRows reads directly (F32, F16, Q4_0, Q8_0); other types
// would go through a scalar dequantization of every row.
bool AccumulatesRows(TensorType type);

// One token's AccumulateRows on rows given by address (neuron bundles in a cache's slots): out[j]
// += sum over k < n, in order of k, of alpha[k] * rows[k][j], each row `cols` values of `type`;
// bit for bit what AccumulateRows gives the same rows and coefficients.
void AccumulateRowPointers(TensorType type, int64_t cols, const uint8_t* const* rows, int64_t n,
                           const float* alpha, float* out, ThreadPool* pool);

// x[0..n) rounded the way a dot product with a `weight_type` matrix rounds its activations (to
// the vec-dot type and back: PowerInfer scales down rows by coefficients in that form). `n` must
// be a multiple of the vec-dot type's block size.
void RoundToVecDotType(TensorType weight_type, float* x, int64_t n);

}  // namespace sparrow::kernels
