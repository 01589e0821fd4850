#pragma once
// SparseFfn: the FFN computing only the neurons a token uses (PowerInfer; SEEDS.md section 1).
// The plan's policy chooses them: PowerInfer's predictor from the residual stream before the FFN
// (ReLU models), or a magnitude threshold on a SwiGLU model's activations (CATS on silu(gate),
// TEAL on down's input). A few tokens decoded alone read only their neurons' rows (up, and gate
// under the predictor) and accumulate only their rows of the down projection stored one row per
// neuron. Larger batches, where sparsity no longer saves reads, go by whole matrices and apply
// each token's choice as a mask, so a token gets the same bits alone and in any batch. Under the
// threshold policies prompt tokens run dense (the predictor policy masks them too, as PowerInfer
// does). A converted file under --cache-mb reads its records through the plan's NeuronStore:
// the neurons a step's sparse tokens use are acquired once (hot segment, cache, or flash) and
// each token computed from them as it would be from memory, bit for bit; steps that use most
// neurons (prompts) read the whole layer in large reads and run by whole matrices. The threshold
// policies' level may change while serving (SparsityLevel); a forward pass runs at the level in
// force at its first layer. One per ForwardPass; not thread-safe.
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

// Sees each sparse token's chosen neurons (every token the plan runs sparse, decoded or not):
// `sparrow convert --calibrate` orders a PowerInfer file's neurons by how often its predictor
// picks them.
class NeuronChoiceObserver {
 public:
  virtual ~NeuronChoiceObserver() = default;
  virtual void OnChosen(int64_t il, const int32_t* neurons, int64_t n) = 0;
};

class SparseFfn : public FeedForward {
 public:
  // Model, plan and pool must outlive this object.
  SparseFfn(const Model& model, std::shared_ptr<const SparsePlan> plan, kernels::ThreadPool* pool);

  Status Compute(int64_t il, const FfnInput& in, float* out) override;
  std::string_view mode() const override { return SparsePolicyName(plan_->policy); }
  FfnCounters counters() const override { return counters_; }
  std::optional<double> SetSparsity(double sparsity) override;
  std::optional<double> sparsity() const override;
  uint64_t scratch_bytes() const override;
  void ReleaseScratch() override;

  // Called with every sparse token's choice from now on; null stops it. Must outlive its use.
  void set_choice_observer(NeuronChoiceObserver* observer) { observer_ = observer; }

 private:
  // `decoded`: the token counts in counters() (prompt tokens of PowerInfer files do not).
  // The predictor's logits for the batch (predictor policy), or null.
  float* Logits(int64_t il, const FfnInput& in);
  void PredictedOne(int64_t il, const float* logits, const float* normed, float* out, bool decoded);
  void ThresholdOne(int64_t il, const float* normed, float* out);
  // A batch with dense tokens besides sparse ones (sparse_), or more sparse ones than the plan's
  // gather_max_tokens: whole matrices, each sparse token masked by its own choice (`logits`
  // under the predictor policy, null under the threshold ones), dense tokens dense. `n_sparse`:
  // how many of sparse_ are set.
  void MixedBatch(int64_t il, const LayerWeights& l, const kernels::WeightMatrix& down_t,
                  const FfnInput& in, const float* logits, int64_t n_sparse, float* out);
  // Compute through the plan's NeuronStore (flash-resident FFN rows).
  Status FromStore(int64_t il, const FfnInput& in, int64_t n_sparse, float* out);
  // Each token's active neurons (tok_ids_ from tok_start_[t]), their union (union_, with
  // pos_[id] its index), under the predictor's logits or the threshold on the resident gate
  // (whose silu values stay in gate_, n_ff per token).
  void SelectTokens(int64_t il, const FfnInput& in, const float* logits);
  // A FromStore step whose tokens share few neurons: their union acquired from the store, the
  // products computed as the records land (DotsFor), then each token's down rows.
  Status GatherFromStore(int64_t il, const FfnInput& in, float* out);
  // Up (and gate) products of every token's neurons whose union index is in `batch` (batch_of_),
  // into up_dot_/gate_dot_ (by index into tok_ids_).
  void DotsFor(int64_t il, const FfnInput& in, int32_t batch);
  // Token t of a GatherFromStore step from its products and its down rows.
  void TokenFromDots(int64_t il, int64_t t, float* out);
  // Keeps in h (n_ff, silu(gate) on entry; u the up outputs) the active neurons' silu(gate)*up,
  // zero elsewhere, listing them in active_.
  void SelectByThreshold(int64_t il, float* h, const float* u);
  // A sparse token chose `neurons`: counted in counters_ when decoded, shown to the observer.
  void Chosen(bool decoded, const int32_t* neurons, int64_t n);
  // A token of the dense level: every neuron computed, counted when decoded.
  void CountDense(bool decoded);
  // h (n_ff, zero outside active_) through the active neurons' down rows into out (n_embd).
  void AccumulateDown(const kernels::WeightMatrix& down_t, float* h, float* out, bool decoded);

  const Model& model_;
  std::shared_ptr<const SparsePlan> plan_;
  kernels::ThreadPool* pool_;
  ActivationPredictor predictor_;
  DenseFfn dense_;
  FfnCounters counters_;
  NeuronChoiceObserver* observer_ = nullptr;
  int64_t current_layer_ = 0;  // of the Compute in progress (for the observer)
  // Threshold policies: the level of the pass in progress (plan_->levels, read at layer 0).
  const ThresholdLevel* level_ = nullptr;
  std::vector<float> logits_, gate_, up_, h_, dense_in_, dense_out_;
  std::vector<int32_t> active_, all_rows_;
  std::vector<uint8_t> sparse_, counted_;  // per token of the current call (see Compute)
  // FromStore's selections and records (see SelectTokens).
  std::vector<int32_t> tok_ids_, tok_start_, union_, pos_, failed_ids_, batch_of_, dot_at_;
  std::vector<float> up_dot_, gate_dot_;
  std::vector<const uint8_t*> recs_, gate_ptrs_, up_ptrs_, down_ptrs_;
  std::vector<uint8_t> bad_;  // by union index: its read failed
  std::vector<float> alpha_;
};

}  // namespace sparrow
