#pragma once
// SparseFfn: the FFN computing only the neurons a token uses (PowerInfer; SEEDS.md section 1).
// The plan's policy chooses them: PowerInfer's predictor from the residual stream before the FFN
// (ReLU models), or a magnitude threshold on a SwiGLU model's activations (CATS on silu(gate),
// TEAL on down's input). A few tokens decoded alone read only their neurons' rows (up, and gate
// under the predictor) and accumulate only their rows of the down projection stored one row per
// neuron. Larger batches, where sparsity no longer saves reads, go by whole matrices and apply
// each token's choice as a mask, so a token gets the same bits alone and in any batch. Under the
// threshold policies prompt tokens run dense (the predictor policy masks them too, as PowerInfer
// does). One per ForwardPass; not thread-safe.
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

  void Compute(int64_t il, const FfnInput& in, float* out) override;
  std::string_view mode() const override { return SparsePolicyName(plan_->policy); }
  FfnCounters counters() const override { return counters_; }

 private:
  // `decoded`: the token counts in counters() (prompt tokens of PowerInfer files do not).
  void PredictedOne(int64_t il, const float* logits, const float* normed, float* out, bool decoded);
  void ThresholdOne(int64_t il, const float* normed, float* out);
  // A batch with dense tokens besides sparse ones (sparse_), or more sparse ones than the plan's
  // gather_max_tokens: whole matrices, each sparse token masked by its own choice (`logits`
  // under the predictor policy, null under the threshold ones), dense tokens dense. `n_sparse`:
  // how many of sparse_ are set.
  void MixedBatch(int64_t il, const FfnInput& in, const float* logits, int64_t n_sparse,
                  float* out);
  // Keeps in h (n_ff, silu(gate) on entry; u the up outputs) the active neurons' silu(gate)*up,
  // zero elsewhere, listing them in active_.
  void SelectByThreshold(int64_t il, float* h, const float* u);
  // Counts a decoded token of active_.size() neurons in counters_.
  void CountDecoded(bool decoded);
  // h (n_ff, zero outside active_) through the active neurons' down rows into out (n_embd).
  void AccumulateDown(int64_t il, float* h, float* out, bool decoded);

  const Model& model_;
  std::shared_ptr<const SparsePlan> plan_;
  kernels::ThreadPool* pool_;
  ActivationPredictor predictor_;
  DenseFfn dense_;
  FfnCounters counters_;
  std::vector<float> logits_, gate_, up_, h_, dense_in_, dense_out_;
  std::vector<int32_t> active_, all_rows_;
  std::vector<uint8_t> sparse_, counted_;  // per token of the current call (see Compute)
};

}  // namespace sparrow
