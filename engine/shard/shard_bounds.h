#pragma once
// The bounds a shard worker holds every number from its coordinator to, before it allocates or
// indexes with it: the layer range, the KV pool's shape, block ids, positions and token counts.
// Every check is written so that no sum or product of wire values can overflow (a start_pos
// near INT64_MAX is refused, not wrapped). Errors are InvalidArgument naming the field.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/common/status.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/remote_layers.h"
#include "engine/runtime/tensor_slice.h"

namespace sparrow {

// Positions per KV block.
constexpr int64_t kMaxShardBlockSize = 4096;
// Block ids of the mirrored pool: its table costs 8 bytes per id whether used or not, so a
// coordinator cannot make a worker allocate more than 32 MiB of it (4M blocks of 16 positions
// are 64M positions, beyond any edge device's pool).
constexpr int64_t kMaxShardBlocks = int64_t{1} << 22;
// Tokens in one step (a batch's decodes plus its prompt chunks; the coordinator's
// step_token_budget may not exceed it).
constexpr int64_t kMaxStepTokens = int64_t{1} << 16;

struct ShardAssignment {
  int64_t first_layer = 0;
  int64_t end_layer = 0;  // one past the last
  int64_t kv_block_size = 16;
  int64_t kv_blocks = 1;
  std::optional<TensorSlice> slice;  // Galaxy's tensor split: this device's slice of each layer
  KvTypes kv_types;                  // the coordinator's pool's: the blocks mirror its bytes
};

// The range within the model's n_layer layers, the block size and the pool within the limits,
// KV types the model's heads of head_dim elements can be stored in.
Status CheckAssignment(const ShardAssignment& a, int64_t n_layer, int64_t head_dim);
// A pool of n_blocks ids: 1..kMaxShardBlocks (`what` names the field: "kv_blocks", ...).
Status CheckPoolSize(int64_t n_blocks, const char* what);
// Segment `index` of a step: tokens within the vocabulary, positions [start_pos, start_pos +
// tokens) covered by its block table, every block id in the pool.
Status CheckSegment(const StageSegment& s, size_t index, int64_t block_size, int64_t n_blocks,
                    int64_t n_vocab);

}  // namespace sparrow
