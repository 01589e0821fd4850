#pragma once
// MatMul and GetRows: the weight-matrix operations of the forward pass, with llama.cpp's CPU
// arithmetic (activations rounded to the weight type's vec-dot type, see vec_dot.h). Results do
// not depend on the thread count or the instruction-set variant. Thread-safe (each call only
// writes its own outputs and this thread's scratch).
#include <cstddef>
#include <cstdint>

#include "engine/common/tensor_type.h"

namespace sparrow::kernels {

class ThreadPool;

// A weight matrix as stored in a model file: `rows` rows of `cols` elements (ggml dims
// {cols, rows}), row r starting at data + r * row_stride_bytes.
struct WeightMatrix {
  TensorType type = TensorType::kF32;
  const void* data = nullptr;
  int64_t cols = 0;  // row length
  int64_t rows = 0;
  size_t row_stride_bytes = 0;
};

// Y[t*ldy + r] = sum_k W[r,k] * X[t*ldx + k] for t in [0, n_tokens), r in [0, rows).
// The weight type must have a dot-product kernel (HasVecDot) and `cols` must be a multiple of
// its block size (and of the activation type's): both are SPARROW_CHECKed, the model loader
// is expected to have rejected other files already. `pool` may be null (single thread).
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, int64_t ldx, float* y,
            int64_t ldy, ThreadPool* pool);

// y[k] = row rows[k] of `w` . x for k < n, one token's activations x (w.cols floats): the rows
// of MatMul's result, bit for bit, computing only the rows asked for (runs of consecutive rows
// go to the kernel together). Ids outside [0, w.rows) are a programmer error (SPARROW_CHECK).
void MatMulRows(const WeightMatrix& w, const int32_t* rows, int64_t n, const float* x, float* y,
                ThreadPool* pool);

// y[k] = rows[k] . x for k < n: MatMulRows on rows given by address (neuron bundles in a cache's
// slots), each row `cols` values of `type`, bit for bit what MatMulRows gives the same rows.
void MatMulRowPointers(TensorType type, int64_t cols, const uint8_t* const* rows, int64_t n,
                       const float* x, float* y, ThreadPool* pool);

// Embedding lookup: out[i*cols .. (i+1)*cols) = row ids[i] of `w`, dequantized, for i < n.
// Ids outside [0, rows) are a programmer error (SPARROW_CHECK).
void GetRows(const WeightMatrix& w, const int32_t* ids, int64_t n, float* out);

}  // namespace sparrow::kernels
