#include "engine/shard/shard_bounds.h"

#include <string>

namespace sparrow {

Status CheckPoolSize(int64_t n_blocks, const char* what) {
  if (n_blocks < 1 || n_blocks > kMaxShardBlocks) {
    return InvalidArgument(std::string(what) + " " + std::to_string(n_blocks) + " is outside 1.." +
                           std::to_string(kMaxShardBlocks));
  }
  return Status::Ok();
}

Status CheckAssignment(const ShardAssignment& a, int64_t n_layer, int64_t head_dim) {
  if (a.first_layer < 0 || a.first_layer >= a.end_layer || a.end_layer > n_layer) {
    return InvalidArgument("layers [" + std::to_string(a.first_layer) + ", " +
                           std::to_string(a.end_layer) + ") fall outside the model's " +
                           std::to_string(n_layer) + " layers");
  }
  if (a.kv_block_size < 1 || a.kv_block_size > kMaxShardBlockSize) {
    return InvalidArgument("kv_block_size " + std::to_string(a.kv_block_size) + " is outside 1.." +
                           std::to_string(kMaxShardBlockSize));
  }
  SPARROW_RETURN_IF_ERROR(CheckKvTypes(a.kv_types, head_dim));
  return CheckPoolSize(a.kv_blocks, "kv_blocks");
}

Status CheckSegment(const StageSegment& s, size_t index, int64_t block_size, int64_t n_blocks,
                    int64_t n_vocab) {
  const std::string where = "segment " + std::to_string(index);
  const auto len = static_cast<int64_t>(s.tokens.size());
  if (len == 0) return InvalidArgument(where + " has no tokens");
  // A repeated field holds fewer than 2^31 ids and a block at most 2^12 positions: no overflow.
  const int64_t covered = static_cast<int64_t>(s.blocks.size()) * block_size;
  if (s.start_pos < 0 || s.start_pos > covered || len > covered - s.start_pos) {
    return InvalidArgument(where + ": " + std::to_string(len) + " tokens from position " +
                           std::to_string(s.start_pos) + " are not covered by its " +
                           std::to_string(s.blocks.size()) + " blocks of " +
                           std::to_string(block_size));
  }
  for (int32_t b : s.blocks) {
    if (b < 0 || b >= n_blocks) {
      return InvalidArgument(where + ": block " + std::to_string(b) + " outside the pool of " +
                             std::to_string(n_blocks));
    }
  }
  for (int32_t t : s.tokens) {
    if (t < 0 || t >= n_vocab) {
      return InvalidArgument(where + ": token " + std::to_string(t) +
                             " outside the vocabulary of " + std::to_string(n_vocab));
    }
  }
  return Status::Ok();
}

}  // namespace sparrow
