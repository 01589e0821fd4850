#pragma once
// ForwardPass: computes a batch of consecutive tokens of one sequence through the transformer
// (RMSNorm, RoPE, grouped-query attention, a gated FFN dense or sparse) and returns logits.
// Owns reusable scratch; one ForwardPass per thread of use (not thread-safe), many may
// share one Model.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/common/status.h"
#include "engine/model/model.h"
#include "engine/runtime/feed_forward.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/remote_layers.h"
#include "engine/runtime/rope.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class ForwardPass {
 public:
  // `pool` may be null (single-threaded); both must outlive this object. `ffn` computes every
  // layer's FFN; null takes the model's default (MakeDefaultFeedForward).
  ForwardPass(const Model& model, kernels::ThreadPool* pool,
              std::unique_ptr<FeedForward> ffn = nullptr);
  ~ForwardPass();

  const FeedForward& ffn() const { return *ffn_; }

  // One sequence's part of a batch: consecutive tokens at positions start_pos.., whose keys
  // and values go to `cache`.
  struct Segment {
    KvCache* cache = nullptr;
    std::span<const int32_t> tokens;
    int64_t start_pos = 0;
    bool all_logits = false;  // logits for every token, or only for the last one
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
  Status RunBatch(std::span<const Segment> segments, std::vector<float>* logits,
                  std::vector<Status>* failures = nullptr);

  // Layers computed by other devices: sorted, disjoint ranges inside the model (errors name the
  // range at fault). RunBatch hands them the hidden state instead of computing those layers; it
  // then needs paged caches (KvCache::block_table). A range that fails fails the whole batch.
  // A batch of several tokens is cut into `micro_batches` parts (0: one per device, this one
  // included) that flow through the devices as a pipeline (EdgeShard), each device computing one
  // part while the next device computes the part before; 1: the whole batch goes from device to
  // device.
  Status SetRemoteLayers(std::vector<std::shared_ptr<RemoteLayers>> ranges,
                         int64_t micro_batches = 0);
  // The last RunBatch failed because a remote range did: its device may have lost the keys and
  // values of every sequence, not only the batch's.
  bool remote_failed() const { return remote_failed_; }

  // A shard worker's part: layers [first, end) of the batch, from the hidden state entering
  // `first` (one row of n_embd per token, segment after segment) to the one leaving end - 1,
  // in place. The segments' caches hold those layers' keys and values.
  Status RunLayers(std::span<const Segment> segments, int64_t first, int64_t end,
                   std::span<float> hidden);

 private:
  // Checks the segments and readies scratch, decode flags and RoPE tables for their n tokens;
  // rows: how many logits rows they want.
  Status Prepare(std::span<const Segment> segments, int64_t* n, int64_t* rows);
  // Layers [first, end): local ones here, remote ranges through their device.
  Status Layers(int64_t first, int64_t end, int64_t n, std::span<const Segment> segments);
  // All layers, the batch cut into micro-batches that flow through the remote ranges' devices
  // and this one as a pipeline.
  Status Pipeline(int64_t n, std::span<const Segment> segments);
  void SplitMicroBatches(int64_t n, std::span<const Segment> segments);
  Status CheckPaged(std::span<const Segment> segments) const;
  void StageSegments(std::span<const Segment> segments);  // into stage_segments_
  // Layer il for the batch's tokens t_first..t_first + n - 1, which `segments` hold.
  void Layer(int64_t il, int64_t t_first, int64_t n, std::span<const Segment> segments);
  void Attention(int64_t il, int64_t t_first, int64_t n, std::span<const Segment> segments);
  void Resize(int64_t n);

  const Model& model_;
  const ModelConfig& c_;
  kernels::ThreadPool* pool_;
  // RoPE of the full-attention layers, and of the sliding-window ones (their own base and scale).
  RopeTable rope_, rope_swa_;
  std::unique_ptr<FeedForward> ffn_;
  std::vector<std::shared_ptr<RemoteLayers>> remote_;  // sorted by first layer
  std::vector<StageSegment> stage_segments_;
  // The layers in order as runs computed here (remote null) or by one remote range.
  struct Stage {
    int64_t first = 0, end = 0;
    RemoteLayers* remote = nullptr;
  };
  std::vector<Stage> stages_;
  int64_t micro_batches_ = 1;
  struct MicroBatch {
    int64_t t_first = 0, n = 0;  // the batch's tokens it holds
    std::vector<Segment> segments;
  };
  std::vector<MicroBatch> micro_;
  // Scratch, sized for the largest batch seen so far.
  std::vector<float> x_, xn_, q_, k_, v_, att_, ffn_out_, attn_scratch_, cos_, sin_, cos_swa_,
      sin_swa_, layer_in_;
  std::vector<uint8_t> decode_;  // per token of the batch: its segment is one token
  std::vector<uint8_t> failed_;  // per token of the batch: the FFN could not compute it
  Status ffn_error_;             // the first FFN failure of the batch
  bool remote_failed_ = false;
};

}  // namespace sparrow
