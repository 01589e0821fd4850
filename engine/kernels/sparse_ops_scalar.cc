// The portable reference of the sparse FFN kernels (sparse_ops.h).
#include <cmath>

#include "engine/kernels/scalar_kernels.h"

namespace sparrow::kernels::scalar {

void Axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

}  // namespace sparrow::kernels::scalar
