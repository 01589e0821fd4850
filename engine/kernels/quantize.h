#pragma once
// Weight quantizers: f32 rows to the storage types (used to write test and generated GGUF
// files). Any valid encoding, not llama.cpp's exact search: a row quantized here and
// dequantized again is close to the input, but need not match llama-quantize byte for byte.
// Pure functions, thread-safe.
#include <cstdint>

#include "engine/common/tensor_type.h"

namespace sparrow::kernels {

// True when QuantizeRow can produce `type`.
bool CanQuantize(TensorType type);

// Writes RowBytes(type, n) bytes at `dst` encoding src[0..n). Handles F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and the activation formats Q8_1 and Q8_K
// (with the activation quantizers' exact rounding). `n` must be a multiple of the block size
// (SPARROW_CHECK).
void QuantizeRow(TensorType type, const float* src, void* dst, int64_t n);

}  // namespace sparrow::kernels
