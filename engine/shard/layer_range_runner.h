#pragma once
// LayerRangeRunner: what a shard worker computes: a contiguous range of the model's layers for
// the coordinator's batches (or, in a tensor split, its slice of each of those layers), with the
// keys and values of those layers (of the slice's heads) in blocks mirroring the coordinator's
// KV pool. Everything it is sent comes from the network, so every block id,
// position and size is checked before use; a bad step is refused with the field at fault and
// changes nothing.
// Not thread-safe: one coordinator stream drives it.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "engine/common/result.h"
#include "engine/model/model.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/remote_layers.h"
#include "engine/shard/kv_block_op.h"
#include "engine/shard/mirrored_kv_blocks.h"
#include "engine/shard/shard_bounds.h"

namespace sparrow {
namespace kernels {
class ThreadPool;
}

class LayerRangeRunner {
 public:
  // InvalidArgument when the range or the pool does not fit the model or the limits
  // (shard_bounds.h). `model` and `pool` (may
  // be null) must outlive the runner.
  static Result<std::unique_ptr<LayerRangeRunner>> Create(const Model& model,
                                                          kernels::ThreadPool* pool,
                                                          const ShardAssignment& assignment);

  const ShardAssignment& assignment() const { return a_; }
  int64_t kv_bytes() const { return kv_.bytes(); }

  // Repeats the coordinator's block copies and resizes, in order; stops at the first bad one.
  Status Apply(std::span<const KvBlockOp> ops);
  // The range's layers for one batch: hidden holds n_embd floats per token, in and out.
  Status Run(std::span<const StageSegment> segments, std::span<float> hidden);
  // A sliced runner's part of layer il (in the range): hidden holds the part's normed input and
  // receives the slice's partial output (ForwardPass::RunSlicePart).
  Status RunPart(LayerPart part, int64_t il, std::span<const StageSegment> segments,
                 std::span<float> hidden);

 private:
  LayerRangeRunner(const Model& model, kernels::ThreadPool* pool, const ShardAssignment& a,
                   std::vector<SlicedLayer> sliced);
  // The segments checked against the blocks and bound to views of them, into segments_.
  Status Bind(std::span<const StageSegment> segments);

  const Model& model_;
  ShardAssignment a_;
  MirroredKvBlocks kv_;
  ForwardPass fp_;
  std::vector<SlicedLayer> sliced_;  // with a slice: each layer of the range cut to it
  std::vector<MirroredSequenceKv> views_;
  std::vector<ForwardPass::Segment> segments_;
};

}  // namespace sparrow
