#pragma once
// MoeFfn: a mixture-of-experts FFN. The router's softmax (or sigmoid) picks each token's top
// n_expert_used experts (weights renormalised or scaled as the family says); a batch's tokens are
// grouped by expert, so each chosen expert's matrices are read once per batch and experts nobody
// chose are not read at all. The experts come from the stacked tensors, from a converted file's
// expert records in the mapping, or from an ExpertSource (the records on flash behind a cache:
// engine/sparse/expert_store_source.h), which is also told the next layer's likely experts so
// their reads run while this layer computes. One instance per ForwardPass, not thread-safe.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

// Where a converted file's expert records come from when they are not all in memory. Records are
// numbered as the file stores them (LayerBundles::record_of maps the router's experts to them).
// One step at a time: Start, Ready until empty, Finish, Release.
class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  // Most records one Start may ask for (bounds the memory of misses that find no cache slot).
  virtual size_t max_records() const = 0;
  // Starts making `records` (distinct records of layer il) available; they stay pinned until
  // Release.
  virtual void Start(int32_t il, std::span<const int32_t> records) = 0;
  // Indices into Start's records usable now that were not handed out before: those in memory at
  // once, then each as its read lands (waiting for at least one). Empty when none is left; a
  // record whose read failed is never handed out.
  virtual std::span<const int32_t> Ready() = 0;
  // Where record k of the Start is (valid until Release, once handed out by Ready).
  virtual const uint8_t* Record(size_t k) const = 0;
  // Waits for the last read: appends the indices whose read failed and returns the first error,
  // naming the file and offset.
  virtual Status Finish(std::vector<int32_t>* failed) = 0;
  virtual void Release() = 0;
  // A guess at layer il's records of the next Start of that layer; a wrong one costs bandwidth.
  virtual void Prefetch(int32_t il, std::span<const int32_t> records) = 0;
  // False when Prefetch would ignore every guess (read-ahead switched off): none is made.
  virtual bool reads_ahead() const = 0;
};

// Sees each layer's routing (calibration: `sparrow convert --calibrate` on an MoE file).
class ExpertObserver {
 public:
  virtual ~ExpertObserver() = default;
  // chosen holds in.n tokens' n_expert_used experts of layer il (the router's numbering).
  virtual void OnRouted(int64_t il, const FfnInput& in, const int32_t* chosen) = 0;
};

class MoeFfn : public FeedForward {
 public:
  // Both must outlive this object; the model's architecture has experts. `source` (may be null:
  // the experts are in memory) serves a converted file's records.
  MoeFfn(const Model& model, kernels::ThreadPool* pool,
         std::unique_ptr<ExpertSource> source = nullptr);

  Status Compute(int64_t il, const FfnInput& in, float* out) override;
  std::string_view mode() const override { return source_ ? "experts-on-flash" : "experts"; }
  // neurons_total counts every expert's neurons, neurons_computed the chosen experts' (their
  // open neurons for ReGLU experts).
  FfnCounters counters() const override { return counters_; }
  uint64_t scratch_bytes() const override {
    return CapacityBytes(probs_, weights_, rows_in_, gate_, up_, expert_out_, guess_in_, guess_,
                         hidden_, chosen_, order_, members_, starts_, records_, expert_of_, failed_,
                         picks_, open_, all_neurons_, open_count_, failed_tokens_);
  }
  void ReleaseScratch() override {
    ReleaseVectors(probs_, weights_, rows_in_, gate_, up_, expert_out_, hidden_);
  }
  void set_observer(ExpertObserver* observer) { observer_ = observer; }

 private:
  // Fills chosen_ and weights_ (n x n_expert_used) from the router applied to `input` (the
  // normed FFN input, or the layer's input where the family routes early).
  void Route(const LayerWeights& l, const float* input, int64_t n);
  // Expert e's output for the (token, slot) pairs of its group into expert_out_.
  void ComputeExpert(const ExpertMatrices& m, int64_t e, const FfnInput& in);
  // ComputeExpert's rest for a ReGLU expert and one (token, slot) pair, its gate products in
  // gate_: the rows of the neurons the gate opened only.
  void ReluExpertOne(const ExpertMatrices& m, int32_t member);
  // The experts' matrices through the source, record by record as they arrive; tokens whose
  // expert could not be read are flagged in in.failed.
  Status ComputeFromSource(int64_t il, const FfnInput& in);
  // Guesses layer il + 1's experts for this step's decoded tokens (its router on this layer's
  // residual, normed with its FFN norm) and hands them to the source to read ahead.
  void PrefetchNext(int64_t il, const FfnInput& in);

  const Model& model_;
  kernels::ThreadPool* pool_;
  std::unique_ptr<ExpertSource> source_;
  ExpertObserver* observer_ = nullptr;
  FfnCounters counters_;
  std::vector<float> probs_, weights_, rows_in_, gate_, up_, expert_out_, guess_in_, guess_;
  std::vector<float> hidden_;
  std::vector<int32_t> chosen_, order_, members_, starts_, records_, expert_of_, failed_, picks_;
  std::vector<int32_t> open_, all_neurons_;
  std::vector<int64_t> open_count_;     // per token of the call: open neurons over its experts
  std::vector<uint8_t> failed_tokens_;  // this call's tokens that lost an expert
};

// The indices of the k largest of `probs` (n values), largest first; ties keep the lower index
// first. `order` is scratch.
void TopK(const float* probs, int64_t n, int64_t k, int32_t* out, std::vector<int32_t>& order);

}  // namespace sparrow
