#pragma once
// SparseFfn: the FFN computing only the neurons a token uses (PowerInfer; SEEDS.md section 1).
// A predictor chooses the active neurons from the residual stream before the FFN; a token
// decoded alone reads only those neurons' gate and up rows and accumulates only their rows of
// the transposed down projection. Batches of many tokens (prefill) compute gate and up by whole
// matrices, where sparsity no longer saves reads, and apply the same choice as a mask, so every
// token gets the result it would get alone. One per ForwardPass; not thread-safe.
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"
#include "engine/sparse/predictor.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class SparseFfn : public FeedForward {
 public:
  // The model must carry predictors and ffn_down_t in every layer (a PowerInfer file); both must
  // outlive this object.
  SparseFfn(const Model& model, kernels::ThreadPool* pool);

  void Compute(int64_t il, const float* residual, const float* normed, int64_t n,
               float* out) override;
  std::string_view mode() const override { return "predictor"; }
  FfnCounters counters() const override { return counters_; }

  // Batches up to this many tokens gather each token's own rows; larger ones go by whole
  // matrices with a mask.
  static constexpr int64_t kMaxGatherTokens = 4;

 private:
  void GatherOne(const LayerWeights& l, const float* logits, const float* normed, float* out);
  void MaskedBatch(const LayerWeights& l, const float* logits, const float* normed, int64_t n,
                   float* out);

  const Model& model_;
  kernels::ThreadPool* pool_;
  ActivationPredictor predictor_;
  float threshold_;
  FfnCounters counters_;
  std::vector<float> logits_, gate_, up_, h_;
  std::vector<int32_t> active_, all_rows_;
  std::vector<uint8_t> act_gate_, act_up_;
};

}  // namespace sparrow
