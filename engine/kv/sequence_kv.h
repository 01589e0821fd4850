#pragma once
// SequenceKv: one sequence's view of the paged KV cache: a block table mapping positions to
// pool blocks. Implements KvCache, so the forward pass reads and writes through it unchanged.
// Not thread-safe; the pool must outlive it.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/runtime/kv_cache.h"

namespace sparrow {

class SequenceKv final : public KvCache {
 public:
  explicit SequenceKv(KvBlockPool* pool) : pool_(pool) {}
  ~SequenceKv() override { ReleaseAll(); }
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  // Positions backed by blocks right now.
  int64_t capacity() const override {
    return static_cast<int64_t>(blocks_.size()) * pool_->block_size();
  }
  KvTypes types() const override { return pool_->types(); }
  uint8_t* KeyRow(int64_t layer, int64_t pos) override;
  uint8_t* ValueRow(int64_t layer, int64_t pos) override;
  std::span<const int32_t> block_table() const override { return blocks_; }
  int64_t block_size() const override { return pool_->block_size(); }

  // Reuses cached blocks for the longest run of full blocks of `tokens` (at most
  // max_tokens tokens) and returns how many positions they cover. Call on an empty table.
  int64_t AttachPrefix(const std::vector<int32_t>& tokens, int64_t max_tokens);
  // Shares `other`'s blocks for positions [0, n_positions), the partial last block included
  // (parallel sampling: n choices of one prompt). Call on an empty table.
  void ForkFrom(const SequenceKv& other, int64_t n_positions);
  // Makes positions [0, n_positions) backed by blocks, and the blocks holding positions
  // [write_from, n_positions) private to this sequence: a block shared with another sequence
  // is copied before it is written (copy-on-write). False when the pool has too few blocks;
  // the table then still maps the same contents.
  bool Reserve(int64_t n_positions, int64_t write_from);
  bool Reserve(int64_t n_positions) { return Reserve(n_positions, n_positions); }
  // Registers the full blocks among the first `n_done` positions of `tokens` in the prefix
  // cache, so other sequences can reuse them.
  void PublishFullBlocks(const std::vector<int32_t>& tokens, int64_t n_done);
  // Keeps positions [0, n_positions) and releases every block past them (speculative decoding:
  // the keys and values of rejected draft tokens). Blocks still held keep their contents;
  // positions at or past n_positions in the last one are garbage until written again. A block
  // published to the prefix cache holds only accepted tokens, so it is never among those cut:
  // that would be a broken invariant (checked).
  void Truncate(int64_t n_positions);
  void ReleaseAll();
  // Follows the blocks the pool moved in a shrink (KvBlockPool::Resize).
  void Remap(const std::unordered_map<BlockId, BlockId>& moved);
  int64_t n_blocks() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  KvBlockPool* pool_;
  std::vector<BlockId> blocks_;
  std::vector<uint64_t> hashes_;  // chain hash of each published full block
};

}  // namespace sparrow
