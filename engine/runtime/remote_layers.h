#pragma once
// RemoteLayers: a contiguous range of a model's layers computed by another device (a shard
// worker, EdgeShard's pipeline stage). The forward pass hands it the hidden state entering the
// range and takes back the one leaving it; the device keeps the keys and values of its layers in
// blocks with the same ids as the coordinator's paged KV cache (KvBlockObserver tells it of
// copies and resizes), so prefix reuse, forks and preemption need nothing more from it.
// The engine knows no network: implementations live with the transport (server/shard/).
#include <cstdint>
#include <span>
#include <string>

#include "engine/common/status.h"
#include "engine/runtime/tensor_slice.h"

namespace sparrow {

// What a step asks of a device: its layers whole, or (Galaxy's tensor split) its slice of one
// layer's attention or FFN.
enum class LayerPart { kLayers, kAttention, kFfn };

// One sequence's part of a batch, as a remote range sees it.
struct StageSegment {
  std::span<const int32_t> tokens;
  int64_t start_pos = 0;
  std::span<const int32_t> blocks;  // its block table in the coordinator's pool
};

class RemoteLayers {
 public:
  virtual ~RemoteLayers() = default;
  virtual int64_t first_layer() const = 0;
  virtual int64_t end_layer() const = 0;  // one past the last
  // Who computes the range, for messages ("worker 10.0.0.2:50061").
  virtual std::string name() const = 0;
  // Hands the range a batch: hidden holds one row of n_embd floats per token, segment after
  // segment, and receives the output of the range's last layer at Finish. The segments are read
  // before Start returns; hidden must stay untouched until then. Several batches may be started
  // before the first finishes (a pipeline of micro-batches); the device computes them in order.
  // An error of Start leaves nothing to finish.
  virtual Status Start(std::span<const StageSegment> segments, int64_t n_embd,
                       std::span<float> hidden) = 0;
  // Waits for the oldest batch started and not finished. An error fails that batch; once one
  // has failed, the batches started after it fail too (the device may have lost their keys).
  virtual Status Finish() = 0;
  // Galaxy's tensor split: the slice of every layer of the range this device computes, or null
  // when it computes the layers whole (the pipeline).
  virtual const TensorSlice* slice() const { return nullptr; }
  // True while the range's device has failed and does not answer again (it may try to reach it
  // here): the scheduler holds new batches for a while rather than fail them, since a new
  // placement without it may come.
  virtual bool Unreachable() { return false; }
  // A sliced device's part of layer `layer` (kAttention or kFfn): hidden holds the part's normed
  // input and receives, at Finish, the device's partial sum of the part's output (n_embd floats
  // per token each). Steps and parts are computed in the order they are started.
  virtual Status StartPart(LayerPart part, int64_t layer, std::span<const StageSegment> segments,
                           int64_t n_embd, std::span<float> hidden) {
    (void)part, (void)layer, (void)segments, (void)n_embd, (void)hidden;
    return Internal(name() + " computes whole layers, not a slice of one");
  }
  Status Run(std::span<const StageSegment> segments, int64_t n_embd, std::span<float> hidden) {
    SPARROW_RETURN_IF_ERROR(Start(segments, n_embd, hidden));
    return Finish();
  }
  // The coordinator's KV pool copied a block's contents or changed its size (KvBlockObserver):
  // applied by the device before its next Run.
  virtual void OnBlockCopy(int32_t src, int32_t dst) = 0;
  virtual void OnPoolResize(int64_t n_blocks) = 0;
};

}  // namespace sparrow
