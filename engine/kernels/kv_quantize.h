#pragma once
// Rows written into a KV cache as llama.cpp's CPU backend writes them (ggml_cpy through each
// type's from_float): f32 as is, f16 and bf16 rounded to nearest even, q8_0 as the activation
// quantizer (id = 127/amax, halves to even), and q4_0, q4_1, q5_0, q5_1 as quantize_row_*_ref
// (the scale from the unrounded block extremes, each value offset by half a step and truncated).
// Pure functions, thread-safe.
#include <cstdint>

#include "engine/common/tensor_type.h"

namespace sparrow::kernels {

// True for the types QuantizeKvRow writes.
bool CanQuantizeKvRow(TensorType type);

// Writes RowBytes(type, n) bytes at dst encoding x[0..n); n a multiple of the block size.
void QuantizeKvRow(TensorType type, const float* x, void* dst, int64_t n);

}  // namespace sparrow::kernels
