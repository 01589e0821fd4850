#pragma once
// Row dequantization: stored tensor rows (any weight type Sparrow computes with, plus the
// activation formats Q8_1/Q8_K) to f32, with ggml's arithmetic. Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>

#include "engine/common/tensor_type.h"

namespace sparrow::kernels {

// Bytes of a row of `n` elements of `type`. SPARROW_CHECKs that the type is known and `n` is a
// multiple of its block size.
size_t RowBytes(TensorType type, int64_t n);

// True when DequantizeRow handles `type`.
bool CanDequantize(TensorType type);

// dst[0..n) = the `n` values stored at `src`. `n` must be a multiple of the block size and
// `type` one CanDequantize accepts (SPARROW_CHECK).
void DequantizeRow(TensorType type, const void* src, float* dst, int64_t n);

}  // namespace sparrow::kernels
