#pragma once
// ActivationPredictor: the per-layer low-rank predictor of PowerInfer / Deja Vu, which guesses
// from the residual stream which FFN neurons a token activates before any of them is computed:
// logits = fc2 . relu(fc1 . x); neuron i runs when logits[i] >= the threshold.
// Owns scratch: one per SparseFfn, not thread-safe.
#include <cstdint>
#include <vector>

#include "engine/model/model_weights.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class ActivationPredictor {
 public:
  explicit ActivationPredictor(kernels::ThreadPool* pool) : pool_(pool) {}

  // logits[t*n_ff + i] for tokens t < n of residual rows x (n_embd each): fc2 . relu(fc1 . x),
  // plus `bias` (n_ff values) when it is not null.
  void Logits(const kernels::WeightMatrix& fc1, const kernels::WeightMatrix& fc2, const float* bias,
              const float* x, int64_t n, float* logits);

 private:
  kernels::ThreadPool* pool_;
  std::vector<float> hidden_;
};

}  // namespace sparrow
