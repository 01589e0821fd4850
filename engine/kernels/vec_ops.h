#pragma once
// Small f32 vector operations of the forward pass, with ggml's arithmetic where it matters for
// matching llama.cpp (sums of squares and softmax denominators in double). Pure functions,
// thread-safe. `out` may alias an input of the same length.
#include <cstdint>

namespace sparrow::kernels {

// out = x / sqrt(mean(x^2) + eps) * w (ggml_rms_norm then ggml_mul: x is scaled first, then
// multiplied by w). `w` may be null for no weight.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);
// Each of `rows` rows of `len` floats at x RMS-normed with weight w, in place.
inline void RmsNormRows(float* x, int64_t rows, int64_t len, const float* w, float eps) {
  for (int64_t r = 0; r < rows; ++r) RmsNorm(&x[r * len], w, len, eps, &x[r * len]);
}

// out = (x - mean(x)) / sqrt(var(x) + eps) * w + b (ggml_norm, then ggml_mul and ggml_add: the
// sums in double, the rest in float); `w` and `b` may be null.
void LayerNorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out);

// dst += src.
void AddInPlace(float* dst, const float* src, int64_t n);
// Each of `rows` rows of `len` floats at x plus `bias` (len floats).
inline void AddToRows(float* x, int64_t rows, int64_t len, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) AddInPlace(&x[r * len], bias, len);
}

// x *= s.
void ScaleInPlace(float* x, int64_t n, float s);

// out = x / (1 + exp(-x)).
void Silu(const float* x, int64_t n, float* out);

// out = silu(gate) * up (the SwiGLU feed-forward gate).
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

// out = gelu(x), GELU's tanh form through ggml's fp16 table (GeGlu's gate activation).
void Gelu(const float* x, int64_t n, float* out);
// out = gelu(gate) * up (GeGLU), GELU's tanh form looked up for the fp16-rounded gate as ggml
// does; |gate| >= 10 is exact (0 or gate).
void GeGlu(const float* gate, const float* up, int64_t n, float* out);
// In place: x = exp(x - max) / sum, the sum accumulated in double (ggml_soft_max).
void SoftmaxInPlace(float* x, int64_t n);

}  // namespace sparrow::kernels
