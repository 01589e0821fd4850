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
void AccumulateRows(const WeightMatrix& w, const int32_t* rows, int64_t n, const float* alpha,
                    int64_t lda, int64_t n_tokens, float* out, int64_t ldo, ThreadPool* pool);

// x[0..n) rounded the way a dot product with a `weight_type` matrix rounds its activations (to
// the vec-dot type and back: PowerInfer scales down rows by coefficients in that form). `n` must
// be a multiple of the vec-dot type's block size.
void RoundToVecDotType(TensorType weight_type, float* x, int64_t n);

}  // namespace sparrow::kernels
