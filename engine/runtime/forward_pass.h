#pragma once
// ForwardPass: computes a batch of consecutive tokens of one sequence through the transformer
// (RMSNorm, RoPE, grouped-query attention, a gated FFN dense or sparse) and returns logits; or,
// for an encoder (BERT: post-norm LayerNorm blocks, no output head), the hidden states.
// Owns reusable scratch; one ForwardPass per thread of use (not thread-safe), many may
// share one Model.
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "engine/common/result.h"
#include "engine/common/status.h"
#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/remote_layers.h"
#include "engine/runtime/rope.h"
#include "engine/runtime/tensor_slice.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class ForwardPass {
 public:
  // `pool` may be null (single-threaded); both must outlive this object. `ffn` computes every
  // layer's FFN (not null: the caller chooses it, e.g. MakeDefaultFeedForward or
  // MakeFeedForward in engine/sparse).
  ForwardPass(const Model& model, kernels::ThreadPool* pool, std::unique_ptr<FeedForward> ffn);
  ~ForwardPass();

  const FeedForward& ffn() const { return *ffn_; }
  FeedForward& ffn() { return *ffn_; }

  // The bytes of the buffers grown for the largest batch so far (this pass's and its FFN's);
  // ReleaseScratch gives them back, with nothing in flight.
  uint64_t scratch_bytes() const;
  void ReleaseScratch();

  // One sequence's part of a batch: consecutive tokens at positions start_pos.., whose keys
  // and values go to `cache`.
  struct Segment {
    KvCache* cache = nullptr;
    std::span<const int32_t> tokens;
    int64_t start_pos = 0;
    bool all_logits = false;  // logits for every token, or only for the last one
    // The final normed hidden states (the output matrix's input: what an embedding pools)
    // instead of logits, for the rows all_logits says.
    bool hidden = false;
  };

  // Runs tokens at positions start_pos.. and stores their keys/values in `cache`.
  // logits receives n_vocab floats for the last token, or for every token when all_logits.
  // Fails (without touching the cache) on an out-of-vocabulary id or a full cache.
  Status Run(std::span<const int32_t> tokens, int64_t start_pos, KvCache& cache, bool all_logits,
             std::vector<float>* logits);

  // Runs several sequences in one pass: the weight matrices are streamed once for all of their
  // tokens (continuous batching), attention stays within each sequence. logits receives the
  // wanted rows segment after segment. Validates every segment before computing anything.
  // A failure of the FFN's flash reads costs only the segments whose tokens needed the failed
  // weights: with `failures`, it receives one status per segment (their logits rows are
  // meaningless) and the call succeeds for the others; without it, the call fails.
  // Submit then Collect, with nothing else in flight.
  // `hidden` (needed when a segment asks for it) receives the hidden segments' rows the same way,
  // n_embd floats each; a batch of hidden segments only skips the output matrix.
  Status RunBatch(std::span<const Segment> segments, std::vector<float>* logits,
                  std::vector<Status>* failures = nullptr, std::vector<float>* hidden = nullptr);

  // The two halves of RunBatch, so that with remote layers several batches are in flight at
  // once, each device computing one while the others compute the rest (EdgeShard's pipeline).
  // Submit validates the batch (an error submits nothing) and computes what this device can
  // without waiting; the batch's tokens and caches must stay as they are until it is collected.
  // Collect completes the oldest batch submitted, as RunBatch would. Without remote layers
  // Submit computes every layer.
  Status Submit(std::span<const Segment> segments);
  Status Collect(std::vector<float>* logits, std::vector<Status>* failures = nullptr,
                 std::vector<float>* hidden = nullptr);

  // Layers computed by other devices: sorted, disjoint ranges inside the model (errors name the
  // range at fault). Ranges with a slice (RemoteLayers::slice, Galaxy's tensor split) share one
  // range of layers with this device: their slices and this device's (what they leave: one run
  // of heads and one of neurons) cut every layer of it, and their partial sums are added here.
  // Batches hand them the hidden state instead of computing those layers; they then need paged
  // caches (KvCache::block_table). A range that fails fails the batch and every batch in flight
  // with it. A batch alone in the pipeline is cut into `micro_batches` parts (0: one per device,
  // this one included) that flow through the devices in turn, each device computing one part while
  // the next computes the part before; 1: the whole batch goes from device to device.
  Status SetRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges,
                         int64_t micro_batches = 0);
  // The last batch collected failed because a remote range did: its device may have lost the
  // keys and values of every sequence, not only the batch's.
  bool remote_failed() const { return remote_failed_; }

  // A sliced worker's part of layer il: hidden holds the part's normed input (one row of n_embd
  // per token) and receives the slice's partial output; `w` is the layer cut to `s`.
  Status RunSlicePart(std::span<const Segment> segments, LayerPart part, int64_t il,
                      const SlicedLayer& w, const TensorSlice& s, std::span<float> hidden);

  // A shard worker's part: layers [first, end) of the batch, from the hidden state entering
  // `first` (one row of n_embd per token, segment after segment) to the one leaving end - 1,
  // in place. The segments' caches hold those layers' keys and values.
  Status RunLayers(std::span<const Segment> segments, int64_t first, int64_t end,
                   std::span<float> hidden);

 private:
  // A part of a batch on its way through the stages.
  struct MicroBatch {
    int64_t t_first = 0, n = 0;  // the batch's tokens it holds
    std::vector<Segment> segments;
    size_t next = 0;    // the stage it goes through next
    bool busy = false;  // started on a remote stage, not finished
  };
  // A batch submitted and not collected: its residual stream, flags and RoPE rows.
  struct Flight {
    std::vector<Segment> segments;
    int64_t n = 0, rows = 0;  // tokens; logits rows wanted
    int64_t hidden_rows = 0;  // hidden-state rows wanted
    std::vector<float> x, cos, sin, cos_swa, sin_swa;
    std::vector<uint8_t> decode;  // per token: its segment is one token
    std::vector<uint8_t> failed;  // per token: the FFN could not compute it
    Status ffn_error;             // the first FFN failure of the batch
    bool split_failed = false;    // a sliced remote failed one of its layers
    std::vector<MicroBatch> micro;
  };
  // Galaxy's tensor split: layers [first, end) cut between this device and the sliced remotes.
  struct SplitGroup {
    int64_t first = 0, end = 0;
    TensorSlice local;
    std::vector<SlicedLayer> layers;  // this device's slice of each
    std::vector<RemoteLayers*> remotes;
    std::vector<std::vector<float>> parts;  // each remote's input, then its partial sum
    std::vector<MicroBatch> chunks;         // the tokens of a part, as sent
    std::vector<size_t> started;            // per remote: the chunks of the part started
  };
  // The group of `sliced` (one range of layers; this device takes the heads and neurons they
  // leave); errors name the slices at fault.
  Result<std::unique_ptr<SplitGroup>> MakeSplitGroup(std::span<RemoteLayers* const> sliced) const;
  // Which query and KV heads an attention computes (all, or a slice's): their projections,
  // biases and output columns.
  struct Heads {
    int64_t n_head = 0, n_head_kv = 0;
    const kernels::WeightMatrix *wq, *wk, *wv, *wo;
    const std::vector<float>*bq, *bk, *bv;
    const std::vector<float>* bo = nullptr;  // the output projection's bias (encoders)
  };

  // The layers in order as runs computed here (remote null) or by one remote range.
  struct Stage {
    int64_t first = 0, end = 0;
    RemoteLayers* remote = nullptr;
  };

  // Checks the segments and readies f's buffers, decode flags and RoPE tables for them.
  Status Prepare(std::span<const Segment> segments, Flight& f);
  void LocalLayers(Flight& f, int64_t first, int64_t end);
  // Moves the flights' micro-batches along the stages: until the oldest flight has landed, or
  // (until_oldest_lands false) while there is work that needs no waiting.
  void Drive(bool until_oldest_lands);
  bool Landed(const Flight& f) const;
  void SplitMicroBatches(Flight& f, int64_t count);
  // The n tokens of `segments` cut into `count` (at most n) parts in order, a segment cut where
  // a part ends.
  static void CutTokens(std::span<const Segment> segments, int64_t n, int64_t count,
                        std::vector<MicroBatch>& out);
  Status CheckPaged(std::span<const Segment> segments) const;
  void StageSegments(std::span<const Segment> segments);  // into stage_segments_
  // Layer il for f's tokens t_first..t_first + n - 1, which `segments` hold.
  void Layer(int64_t il, Flight& f, int64_t t_first, int64_t n, std::span<const Segment> segments);
  // An encoder's (encoder_layer.cc): its input rows from the token rows in f.x, and its
  // post-norm layer.
  void EncoderInput(Flight& f);
  void EncoderLayer(int64_t il, Flight& f, int64_t t_first, int64_t n,
                    std::span<const Segment> segments);
  // Why an encoder cannot run `sg` (it must hold its whole input, within the position rows).
  Status CheckEncoderSegment(const Segment& sg) const;
  // The heads' attention from the normed input `in` to their output projection `out` (which may
  // be `in`: it is read first).
  void Attention(int64_t il, const Heads& h, Flight& f, int64_t t_first, int64_t n,
                 std::span<const Segment> segments, const float* in, float* out);
  // Layer il cut between the devices of split_.
  void SplitLayer(int64_t il, Flight& f, int64_t t_first, int64_t n,
                  std::span<const Segment> segments);
  // The slice's part of layer il from its normed input `in` to its partial output `out`.
  void SliceAttention(int64_t il, const SlicedLayer& w, const TensorSlice& s, Flight& f,
                      int64_t t_first, int64_t n, std::span<const Segment> segments,
                      const float* in, float* out);
  void SliceFfn(const SlicedLayer& w, const TensorSlice& s, int64_t n, const float* in, float* out);
  void Resize(int64_t n);

  const Model& model_;
  const ModelConfig& c_;
  kernels::ThreadPool* pool_;
  // RoPE of the full-attention layers, and of the sliding-window ones (their own base and scale).
  RopeTable rope_, rope_swa_;
  std::unique_ptr<FeedForward> ffn_;
  std::vector<std::shared_ptr<RemoteLayers>> remote_;  // sorted by first layer
  std::unique_ptr<SplitGroup> split_;
  std::vector<Stage> stages_;
  int64_t micro_batches_ = 1;
  std::vector<StageSegment> stage_segments_;
  std::deque<std::unique_ptr<Flight>> flights_;  // submitted, oldest first
  std::vector<std::unique_ptr<Flight>> spare_;   // collected, their buffers kept
  Flight worker_flight_;                         // RunLayers'
  Status remote_error_;  // the first remote failure since the pipeline was last empty
  bool remote_failed_ = false;
  // Scratch of one layer (or the output head), sized for the largest batch seen so far.
  std::vector<float> xn_, q_, k_, v_, att_, ffn_out_, attn_scratch_, layer_in_;
  std::vector<float> slice_gate_, slice_up_;  // a slice's FFN
};

}  // namespace sparrow
