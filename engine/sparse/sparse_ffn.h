#pragma once
// SparseFfn: the FFN computing only the neurons a token uses (PowerInfer; SEEDS.md section 1).
// The plan's policy chooses them: PowerInfer's predictor from the residual stream before the FFN
// (ReLU models), or a magnitude threshold on a SwiGLU model's activations (CATS on silu(gate),
// TEAL on down's input). A token decoded alone reads only its neurons' rows (up, and gate under
// the predictor) and accumulates only their rows of the down projection stored one row per
// neuron. Batches of many tokens (prefill), where sparsity no longer saves reads, go by whole
// matrices: masked by the predictor's choice (so every token gets what it would get alone), dense
// under threshold policies. One per ForwardPass; not thread-safe.
#include <memory>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/dense_ffn.h"
#include "engine/runtime/feed_forward.h"
#include "engine/sparse/predictor.h"
#include "engine/sparse/sparse_plan.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class SparseFfn : public FeedForward {
 public:
  // Model, plan and pool must outlive this object.
  SparseFfn(const Model& model, std::shared_ptr<const SparsePlan> plan, kernels::ThreadPool* pool);

  void Compute(int64_t il, const float* residual, const float* normed, int64_t n,
               float* out) override;
  std::string_view mode() const override { return SparsePolicyName(plan_->policy); }
  FfnCounters counters() const override { return counters_; }

  // Batches up to this many tokens take each token's own neurons; larger ones go by whole
  // matrices.
  static constexpr int64_t kMaxGatherTokens = 4;

 private:
  void PredictedOne(int64_t il, const float* logits, const float* normed, float* out);
  void PredictedBatch(int64_t il, const float* logits, const float* normed, int64_t n, float* out);
  void ThresholdOne(int64_t il, const float* normed, float* out);
  // h (n_ff, zero outside `active_`) through the down rows of the active neurons into out.
  void AccumulateDown(int64_t il, float* h, float* out);
  const uint8_t* QuantizedInput(const kernels::WeightMatrix& w, const float* x,
                                std::vector<uint8_t>& buf);

  const Model& model_;
  std::shared_ptr<const SparsePlan> plan_;
  kernels::ThreadPool* pool_;
  ActivationPredictor predictor_;
  DenseFfn dense_;
  FfnCounters counters_;
  std::vector<float> logits_, gate_, up_, h_;
  std::vector<int32_t> active_, all_rows_;
  std::vector<uint8_t> act_gate_, act_up_;
};

}  // namespace sparrow
