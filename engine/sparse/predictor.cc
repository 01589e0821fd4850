#include "engine/sparse/predictor.h"

#include "engine/common/check.h"
#include "engine/kernels/matmul.h"

namespace sparrow {

void ActivationPredictor::Logits(const LayerWeights& l, const float* x, int64_t n, float* logits) {
  SPARROW_CHECK(l.pred_fc1.data != nullptr && l.pred_fc2.data != nullptr);
  const int64_t rank = l.pred_fc1.rows;
  if (hidden_.size() < static_cast<size_t>(n * rank)) hidden_.resize(n * rank);
  kernels::MatMul(l.pred_fc1, x, n, l.pred_fc1.cols, hidden_.data(), rank, pool_);
  for (int64_t i = 0; i < n * rank; ++i) hidden_[i] = hidden_[i] > 0.0f ? hidden_[i] : 0.0f;
  kernels::MatMul(l.pred_fc2, hidden_.data(), n, rank, logits, l.pred_fc2.rows, pool_);
}

}  // namespace sparrow
