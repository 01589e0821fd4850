#pragma once
// MoeFfn: a mixture-of-experts FFN in memory. The router's softmax (or sigmoid) picks each token's
// top n_expert_used experts (weights renormalised or scaled as the family says); a batch's tokens
// are grouped by expert, so each chosen expert's matrices are read once per batch and experts
// nobody chose are not read at all. One instance per ForwardPass, not thread-safe.
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class MoeFfn : public FeedForward {
 public:
  // Both must outlive this object; the model's architecture has experts.
  MoeFfn(const Model& model, kernels::ThreadPool* pool);

  Status Compute(int64_t il, const FfnInput& in, float* out) override;
  std::string_view mode() const override { return "experts"; }
  // neurons_total counts every expert's neurons, neurons_computed the chosen experts'.
  FfnCounters counters() const override { return counters_; }

 private:
  // Fills chosen_ and weights_ (n x n_expert_used) from the router applied to `input` (the
  // normed FFN input, or the layer's input where the family routes early).
  void Route(const LayerWeights& l, const float* input, int64_t n);

  const Model& model_;
  kernels::ThreadPool* pool_;
  FfnCounters counters_;
  std::vector<float> probs_, weights_, rows_in_, gate_, up_, expert_out_;
  std::vector<int32_t> chosen_, order_, members_, starts_;
};

// The indices of the k largest of `probs` (n values), largest first; ties keep the lower index
// first. `order` is scratch.
void TopK(const float* probs, int64_t n, int64_t k, int32_t* out, std::vector<int32_t>& order);

}  // namespace sparrow
