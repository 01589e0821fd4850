#include "engine/sparse/predictor.h"

#include "engine/common/check.h"
#include "engine/kernels/matmul.h"

namespace sparrow {

void ActivationPredictor::Logits(const kernels::WeightMatrix& fc1, const kernels::WeightMatrix& fc2,
                                 const float* bias, const float* x, int64_t n, float* logits) {
  SPARROW_CHECK(fc1.data != nullptr && fc2.data != nullptr && fc2.cols == fc1.rows);
  const int64_t rank = fc1.rows, n_out = fc2.rows;
  if (hidden_.size() < static_cast<size_t>(n * rank)) hidden_.resize(n * rank);
  kernels::MatMul(fc1, x, n, fc1.cols, hidden_.data(), rank, pool_);
  for (int64_t i = 0; i < n * rank; ++i) hidden_[i] = hidden_[i] > 0.0f ? hidden_[i] : 0.0f;
  kernels::MatMul(fc2, hidden_.data(), n, rank, logits, n_out, pool_);
  if (bias == nullptr) return;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < n_out; ++i) logits[t * n_out + i] += bias[i];
  }
}

}  // namespace sparrow
