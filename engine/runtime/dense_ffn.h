#pragma once
// DenseFfn: every neuron of the FFN, by whole-matrix products:
// down(act_gate(gate . x) * act_up(up . x)), with the activations of the model's FfnKind (BERT's
// ungated down(gelu(up . x))), plus the up and down biases where the model has them.
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class DenseFfn : public FeedForward {
 public:
  // The model needs ffn_down or its rows ffn_down_t (files of neuron bundles); both must outlive
  // this object.
  DenseFfn(const Model& model, kernels::ThreadPool* pool);

  Status Compute(int64_t il, const FfnInput& in, float* out) override;
  // Compute with layer il's FFN weights given (rows staged from flash in place of the model's).
  void ComputeLayer(int64_t il, const LayerWeights& l, const FfnInput& in, float* out);
  std::string_view mode() const override { return "dense"; }
  FfnCounters counters() const override { return counters_; }
  uint64_t scratch_bytes() const override { return CapacityBytes(gate_, up_, all_rows_); }
  void ReleaseScratch() override { ReleaseVectors(gate_, up_, all_rows_); }

  // Called on every Compute from now on; null stops it. Must outlive its use.
  void set_observer(FfnObserver* observer) { observer_ = observer; }

 private:
  const Model& model_;
  kernels::ThreadPool* pool_;
  FfnObserver* observer_ = nullptr;
  FfnCounters counters_;
  std::vector<float> gate_, up_;
  std::vector<int32_t> all_rows_;
};

// The gate's activation alone, in place: silu for SwiGLU, gelu for GeGLU (the magnitude CATS
// thresholds; times up it is GatedActivation bit for bit). Only these two kinds.
void GateActivation(FfnKind kind, float* gate, int64_t n);

// h = act_gate(gate) * act_up(up) for the model's kind, in place into gate (kGelu: gelu(up), the
// gate unread).
void GatedActivation(FfnKind kind, float* gate, const float* up, int64_t n);

// out (n rows of n_embd) = down . h (n rows of n_ff) for every neuron: by ffn_down, or where a
// file has only the rows (neuron bundles), by accumulating all of ffn_down_t's rows with h
// rounded as a dense product rounds it. `all_rows` is scratch.
void DenseDown(const ModelConfig& c, const LayerWeights& l, float* h, int64_t n, float* out,
               std::vector<int32_t>& all_rows, kernels::ThreadPool* pool);

}  // namespace sparrow
