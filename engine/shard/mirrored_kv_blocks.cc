#include "engine/shard/mirrored_kv_blocks.h"

#include <algorithm>
#include <string>

#include "engine/shard/shard_bounds.h"

namespace sparrow {

MirroredKvBlocks::MirroredKvBlocks(int64_t first_layer, int64_t end_layer, int64_t kv_dim,
                                   int64_t block_size, int64_t n_blocks)
    : first_(first_layer),
      end_(end_layer),
      kv_dim_(kv_dim),
      block_size_(block_size),
      block_floats_(2 * (end_layer - first_layer) * block_size * kv_dim),
      blocks_(static_cast<size_t>(n_blocks)) {}

float* MirroredKvBlocks::Slot(int32_t block) {
  auto& b = blocks_[static_cast<size_t>(block)];
  if (!b) {
    // Zeroed: a block read before any write (it never is when the mirror is kept) reads zeros.
    b = std::make_unique<float[]>(static_cast<size_t>(block_floats_));
    ++allocated_;
  }
  return b.get();
}

float* MirroredKvBlocks::Key(int32_t block, int64_t layer, int64_t offset) {
  return Slot(block) + ((layer - first_) * block_size_ + offset) * kv_dim_;
}

float* MirroredKvBlocks::Value(int32_t block, int64_t layer, int64_t offset) {
  return Slot(block) + (((end_ - first_) + (layer - first_)) * block_size_ + offset) * kv_dim_;
}

Status MirroredKvBlocks::Apply(const KvBlockOp& op) {
  const auto n = static_cast<int64_t>(blocks_.size());
  if (op.kind == KvBlockOp::Kind::kResize) {
    SPARROW_RETURN_IF_ERROR(CheckPoolSize(op.n_blocks, "KV pool resize to"));
    for (int64_t b = op.n_blocks; b < n; ++b) {
      if (blocks_[static_cast<size_t>(b)]) --allocated_;
    }
    blocks_.resize(static_cast<size_t>(op.n_blocks));
    return Status::Ok();
  }
  if (op.src < 0 || op.src >= n || op.dst < 0 || op.dst >= n) {
    return InvalidArgument("KV block copy " + std::to_string(op.src) + " -> " +
                           std::to_string(op.dst) + " outside the pool of " + std::to_string(n) +
                           " blocks");
  }
  if (op.src == op.dst) return Status::Ok();
  const float* src = Slot(op.src);
  std::copy_n(src, block_floats_, Slot(op.dst));
  return Status::Ok();
}

}  // namespace sparrow
