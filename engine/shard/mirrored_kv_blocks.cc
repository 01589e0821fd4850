#include "engine/shard/mirrored_kv_blocks.h"

#include <algorithm>
#include <string>

#include "engine/shard/shard_bounds.h"

namespace sparrow {

MirroredKvBlocks::MirroredKvBlocks(int64_t first_layer, int64_t end_layer, int64_t kv_dim,
                                   int64_t block_size, int64_t n_blocks, KvTypes types)
    : first_(first_layer),
      end_(end_layer),
      block_size_(block_size),
      types_(types),
      k_row_(KvRowBytes(types.k, kv_dim)),
      v_row_(KvRowBytes(types.v, kv_dim)),
      block_bytes_(static_cast<size_t>((end_layer - first_layer) * block_size) * (k_row_ + v_row_)),
      blocks_(static_cast<size_t>(n_blocks)) {}

uint8_t* MirroredKvBlocks::Slot(int32_t block) {
  auto& b = blocks_[static_cast<size_t>(block)];
  if (!b) {
    // Zeroed: a block read before any write (it never is when the mirror is kept) reads zeros.
    b = std::make_unique<uint8_t[]>(block_bytes_);
    ++allocated_;
  }
  return b.get();
}

uint8_t* MirroredKvBlocks::KeyRow(int32_t block, int64_t layer, int64_t offset) {
  return Slot(block) + static_cast<size_t>((layer - first_) * block_size_ + offset) * k_row_;
}

uint8_t* MirroredKvBlocks::ValueRow(int32_t block, int64_t layer, int64_t offset) {
  const size_t values = static_cast<size_t>((end_ - first_) * block_size_) * k_row_;
  return Slot(block) + values +
         static_cast<size_t>((layer - first_) * block_size_ + offset) * v_row_;
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
  const uint8_t* src = Slot(op.src);
  std::copy_n(src, block_bytes_, Slot(op.dst));
  return Status::Ok();
}

}  // namespace sparrow
