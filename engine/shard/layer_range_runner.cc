#include "engine/shard/layer_range_runner.h"

#include <string>

#include "engine/sparse/ffn_factory.h"

namespace sparrow {

Result<std::unique_ptr<LayerRangeRunner>> LayerRangeRunner::Create(const Model& model,
                                                                   kernels::ThreadPool* pool,
                                                                   const ShardAssignment& a) {
  const int64_t n_layer = model.config().n_layer;
  if (a.first_layer < 0 || a.first_layer >= a.end_layer || a.end_layer > n_layer) {
    return InvalidArgument("layers " + std::to_string(a.first_layer) + ".." +
                           std::to_string(a.end_layer - 1) + " fall outside the model's " +
                           std::to_string(n_layer) + " layers");
  }
  if (a.kv_block_size < 1 || a.kv_block_size > 4096) {
    return InvalidArgument("kv_block_size " + std::to_string(a.kv_block_size) +
                           " is outside 1..4096");
  }
  if (a.kv_blocks < 1 || a.kv_blocks > (int64_t{1} << 31) - 1) {
    return InvalidArgument("kv_blocks " + std::to_string(a.kv_blocks) + " is outside 1..2^31-1");
  }
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
          a.kv_block_size, a.kv_blocks),
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
    const auto len = static_cast<int64_t>(s.tokens.size());
    const std::string where = "segment " + std::to_string(i);
    if (len == 0) return InvalidArgument(where + " has no tokens");
    if (s.start_pos < 0 || s.start_pos + len > static_cast<int64_t>(s.blocks.size()) * bs) {
      return InvalidArgument(where + ": positions " + std::to_string(s.start_pos) + ".." +
                             std::to_string(s.start_pos + len - 1) + " are not covered by its " +
                             std::to_string(s.blocks.size()) + " blocks of " + std::to_string(bs));
    }
    for (int32_t b : s.blocks) {
      if (b < 0 || b >= n_blocks) {
        return InvalidArgument(where + ": block " + std::to_string(b) + " outside the pool of " +
                               std::to_string(n_blocks));
      }
    }
    views_.emplace_back(&kv_, s.blocks);
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    segments_.push_back({&views_[i], segments[i].tokens, segments[i].start_pos, false});
  }
  return Status::Ok();
}

}  // namespace sparrow
