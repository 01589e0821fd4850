#include "engine/shard/layer_range_runner.h"

#include <string>

#include "engine/sparse/ffn_factory.h"

namespace sparrow {

Result<std::unique_ptr<LayerRangeRunner>> LayerRangeRunner::Create(const Model& model,
                                                                   kernels::ThreadPool* pool,
                                                                   const ShardAssignment& a) {
  SPARROW_RETURN_IF_ERROR(CheckAssignment(a, model.config().n_layer, model.config().head_dim));
  std::vector<SlicedLayer> sliced;
  if (a.slice) {
    SPARROW_ASSIGN_OR_RETURN(sliced, SliceLayers(model, a.first_layer, a.end_layer, *a.slice));
  }
  return std::unique_ptr<LayerRangeRunner>(new LayerRangeRunner(model, pool, a, std::move(sliced)));
}

LayerRangeRunner::LayerRangeRunner(const Model& model, kernels::ThreadPool* pool,
                                   const ShardAssignment& a, std::vector<SlicedLayer> sliced)
    : model_(model),
      a_(a),
      // A slice keeps the keys and values of its heads only.
      kv_(a.first_layer, a.end_layer,
          a.slice ? a.slice->kv_heads() * model.config().head_dim : model.config().kv_dim(),
          a.kv_block_size, a.kv_blocks, a.kv_types),
      fp_(model, pool, MakeDefaultFeedForward(model, pool)),
      sliced_(std::move(sliced)) {}

Status LayerRangeRunner::Apply(std::span<const KvBlockOp> ops) {
  for (const KvBlockOp& op : ops) SPARROW_RETURN_IF_ERROR(kv_.Apply(op));
  return Status::Ok();
}

Status LayerRangeRunner::Run(std::span<const StageSegment> segments, std::span<float> hidden) {
  if (a_.slice) return InvalidArgument("a sliced worker computes parts of layers, not whole ones");
  SPARROW_RETURN_IF_ERROR(Bind(segments));
  // RunLayers checks the hidden state's size against the segments' tokens.
  return fp_.RunLayers(segments_, a_.first_layer, a_.end_layer, hidden);
}

Status LayerRangeRunner::RunPart(LayerPart part, int64_t il, std::span<const StageSegment> segments,
                                 std::span<float> hidden) {
  if (!a_.slice) return InvalidArgument("this worker computes whole layers, not slices");
  if (il < a_.first_layer || il >= a_.end_layer) {
    return InvalidArgument("layer " + std::to_string(il) + " is outside the assigned layers " +
                           std::to_string(a_.first_layer) + ".." +
                           std::to_string(a_.end_layer - 1));
  }
  SPARROW_RETURN_IF_ERROR(Bind(segments));
  return fp_.RunSlicePart(segments_, part, il, sliced_[static_cast<size_t>(il - a_.first_layer)],
                          *a_.slice, hidden);
}

Status LayerRangeRunner::Bind(std::span<const StageSegment> segments) {
  if (segments.empty()) return InvalidArgument("a step with no segments");
  const int64_t bs = kv_.block_size(), n_blocks = kv_.n_blocks();
  views_.clear();
  views_.reserve(segments.size());
  segments_.clear();
  for (size_t i = 0; i < segments.size(); ++i) {
    const StageSegment& s = segments[i];
    SPARROW_RETURN_IF_ERROR(CheckSegment(s, i, bs, n_blocks, model_.config().n_vocab));
    views_.emplace_back(&kv_, s.blocks);
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    segments_.push_back({&views_[i], segments[i].tokens, segments[i].start_pos, false});
  }
  return Status::Ok();
}

}  // namespace sparrow
