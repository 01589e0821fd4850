#pragma once
// KvBlockPool: the paged KV cache's storage. A fixed number of blocks, each holding the keys
// and values of `block_size` consecutive positions for every layer. Blocks are reference
// counted (prefix sharing); full blocks can be registered under the hash of their token chain
// and stay cached, evictable in LRU order, after their last user releases them.
// Not thread-safe: owned and used by the scheduler thread.
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace sparrow {

using BlockId = int32_t;

struct KvPoolStats {
  int64_t total_blocks = 0;
  int64_t used_blocks = 0;    // referenced by at least one sequence
  int64_t cached_blocks = 0;  // unreferenced but kept for prefix reuse
  int64_t free_blocks = 0;
  int64_t prefix_hits = 0;  // blocks reused from the prefix cache, cumulative
  int64_t prefix_lookups = 0;
};

class KvBlockPool {
 public:
  KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_size, int64_t n_blocks);

  // Bytes one block takes (keys and values, all layers).
  static int64_t BlockBytes(int64_t n_layer, int64_t kv_dim, int64_t block_size);

  int64_t block_size() const { return block_size_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t available() const;  // free plus evictable cached blocks

  // A fresh block with refcount 1, evicting the least recently used cached block if needed;
  // nullopt when every block is referenced.
  std::optional<BlockId> Allocate();
  void Retain(BlockId b);
  int32_t refs(BlockId b) const { return blocks_[b].refs; }
  // Copies every layer's keys and values of `src` into `dst` (copy-on-write).
  void CopyContents(BlockId src, BlockId dst);
  // Drops one reference; at zero the block becomes cached (if registered) or free.
  void Release(BlockId b);

  // Prefix cache. `hash` identifies a full block by its tokens and all tokens before them.
  std::optional<BlockId> Lookup(uint64_t hash);  // retains the block on a hit
  void Register(BlockId b, uint64_t hash);       // a full block whose contents are final

  float* Key(BlockId b, int64_t layer, int64_t offset);
  float* Value(BlockId b, int64_t layer, int64_t offset);

  KvPoolStats Stats() const;

 private:
  struct Block {
    int32_t refs = 0;
    std::optional<uint64_t> hash;
    std::list<BlockId>::iterator lru_pos;
    bool in_lru = false;
  };

  int64_t n_layer_, kv_dim_, block_size_, n_blocks_;
  std::vector<float> k_, v_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;
  std::list<BlockId> lru_;  // unreferenced registered blocks, least recently used first
  std::unordered_map<uint64_t, BlockId> by_hash_;
  int64_t used_ = 0;
  int64_t prefix_hits_ = 0, prefix_lookups_ = 0;
};

// Hash of a full block's tokens chained to the hash of everything before it.
uint64_t ChainBlockHash(uint64_t parent, const int32_t* tokens, int64_t n);

}  // namespace sparrow
