#pragma once
// MirroredKvBlocks: a shard worker's keys and values for its layer range, in blocks with the
// coordinator's ids (the coordinator's pool decides which block a position lives in; this only
// stores). A block takes memory from its first write on, so a worker holding few layers of a big
// pool pays only for the blocks in use. Rows are in the coordinator's KvTypes, so a block here
// has the bytes of the coordinator's block for these layers. MirroredSequenceKv is one sequence's
// view through its block table, the KvCache the forward pass writes into. Not thread-safe.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/common/status.h"
#include "engine/runtime/kv_cache.h"
#include "engine/shard/kv_block_op.h"

namespace sparrow {

class MirroredKvBlocks {
 public:
  // Layers [first_layer, end_layer) of blocks of `block_size` positions, `n_blocks` ids (the
  // caller checks them: CheckAssignment), rows of `types`.
  MirroredKvBlocks(int64_t first_layer, int64_t end_layer, int64_t kv_dim, int64_t block_size,
                   int64_t n_blocks, KvTypes types = {});

  int64_t first_layer() const { return first_; }
  int64_t end_layer() const { return end_; }
  int64_t block_size() const { return block_size_; }
  const KvTypes& types() const { return types_; }
  int64_t n_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  // Memory the blocks written so far take.
  int64_t bytes() const { return allocated_ * static_cast<int64_t>(block_bytes_); }

  // Repeats the coordinator's copy or resize; an id out of range is InvalidArgument.
  Status Apply(const KvBlockOp& op);

  uint8_t* KeyRow(int32_t block, int64_t layer, int64_t offset);
  uint8_t* ValueRow(int32_t block, int64_t layer, int64_t offset);

 private:
  uint8_t* Slot(int32_t block);

  int64_t first_, end_, block_size_;
  KvTypes types_;
  size_t k_row_, v_row_, block_bytes_;
  std::vector<std::unique_ptr<uint8_t[]>> blocks_;
  int64_t allocated_ = 0;
};

class MirroredSequenceKv final : public KvCache {
 public:
  // The table must hold ids below blocks->n_blocks() (RunLayers' caller checks); both must
  // outlive the view.
  MirroredSequenceKv(MirroredKvBlocks* blocks, std::span<const int32_t> table)
      : blocks_(blocks), table_(table) {}
  int64_t capacity() const override {
    return static_cast<int64_t>(table_.size()) * blocks_->block_size();
  }
  KvTypes types() const override { return blocks_->types(); }
  uint8_t* KeyRow(int64_t layer, int64_t pos) override {
    return blocks_->KeyRow(table_[pos / blocks_->block_size()], layer, pos % blocks_->block_size());
  }
  uint8_t* ValueRow(int64_t layer, int64_t pos) override {
    return blocks_->ValueRow(table_[pos / blocks_->block_size()], layer,
                             pos % blocks_->block_size());
  }
  std::span<const int32_t> block_table() const override { return table_; }
  int64_t block_size() const override { return blocks_->block_size(); }

 private:
  MirroredKvBlocks* blocks_;
  std::span<const int32_t> table_;
};

}  // namespace sparrow
