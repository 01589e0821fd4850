// The fuzz build compiles the kernels it needs without their dispatch table, whose variants need
// GCC's target flags: the scalar reference quantizes the KV rows the shard wire's copies write,
// bit for bit what every variant gives (the conformance tests hold them to it).
#include "engine/common/check.h"
#include "engine/kernels/scalar_kernels.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {

void QuantizeActivationRow(TensorType act_type, const float* x, void* dst, int64_t n) {
  switch (act_type) {
    case TensorType::kF32:
      return scalar::QuantizeActF32(x, dst, n);
    case TensorType::kF16:
      return scalar::QuantizeActF16(x, dst, n);
    case TensorType::kBF16:
      return scalar::QuantizeActBF16(x, dst, n);
    case TensorType::kQ8_0:
      return scalar::QuantizeActQ8_0(x, dst, n);
    default:
      SPARROW_CHECK(false);
  }
}

}  // namespace sparrow::kernels
