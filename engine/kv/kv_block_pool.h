#pragma once
// KvBlockPool: the paged KV cache's storage. Blocks, each holding the keys and values of
// `block_size` consecutive positions for every layer. Blocks are reference counted (prefix
// sharing); full blocks can be registered under the hash of their token chain and stay cached,
// evictable in LRU order, after their last user releases them. The number of blocks changes at
// run time (Resize, under the memory budget): blocks live in a SlotArena, so a shrink unmaps
// whole chunks and RSS falls; the lowest free id is handed out first, so that the blocks in use
// cluster at the bottom and a shrink moves few of them. Keys and values are stored in the pool's
// KvTypes (f16, q8_0, ...): a block's bytes, every copy and the budget follow them.
// Not thread-safe: owned and used by the scheduler thread.
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/common/status.h"
#include "engine/kv/kv_block_tier.h"
#include "engine/memory/slot_arena.h"
#include "engine/runtime/kv_cache.h"

namespace sparrow {

using BlockId = int32_t;

struct KvPoolStats {
  int64_t total_blocks = 0;
  int64_t used_blocks = 0;    // referenced by at least one sequence
  int64_t cached_blocks = 0;  // unreferenced but kept for prefix reuse
  int64_t free_blocks = 0;
  int64_t prefix_hits = 0;  // blocks reused from the prefix cache, cumulative
  int64_t prefix_lookups = 0;
  int64_t mapped_bytes = 0;  // address space the blocks take now (whole chunks)
  // Blocks written since they were mapped: the lowest free id goes first, so these are the
  // blocks below the highest ever handed out; the ones above cost no memory yet.
  int64_t touched_blocks = 0;
  int64_t tier_hits = 0;  // of prefix_hits, blocks read back from the tier (KvBlockTier)
};

// Told of every change a pool makes to block contents other than the forward pass's writes, in
// order: a device that holds other layers of the same blocks (a shard worker) repeats them.
class KvBlockObserver {
 public:
  virtual ~KvBlockObserver() = default;
  virtual void OnCopy(BlockId src, BlockId dst) = 0;  // copy-on-write, or a move in a shrink
  virtual void OnResize(int64_t n_blocks) = 0;        // ids from n_blocks up are gone
};

class KvBlockPool {
 public:
  // SPARROW_CHECKs that `types` can hold rows of kv_dim elements.
  KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_size, int64_t n_blocks,
              KvTypes types = {});

  // Bytes one block takes (keys and values of `types`, all layers).
  static int64_t BlockBytes(int64_t n_layer, int64_t kv_dim, int64_t block_size,
                            const KvTypes& types);

  int64_t block_size() const { return block_size_; }
  const KvTypes& types() const { return types_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t available() const;              // free plus evictable cached blocks
  int64_t used() const { return used_; }  // referenced by at least one sequence

  // Sets the number of blocks (at least 1). Growing maps memory for the new ones (on failure
  // nothing changes). Shrinking needs used() <= n_blocks (the caller preempts sequences first):
  // each referenced block above the new end moves, contents copied, into a free or cached block
  // below it and is reported in `moved` (old id -> new id), which every block table holding it
  // must follow (SequenceKv::Remap); cached blocks above the end are kept while free room
  // remains below it, most recently used first, and dropped otherwise.
  Status Resize(int64_t n_blocks, std::unordered_map<BlockId, BlockId>* moved);

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
  // Lookup retains the block on a hit; a block the tier holds and memory does not is read back
  // into a fresh block (registered, refcount 1). Register makes a full block whose contents are
  // final reusable, and hands a copy to the tier.
  std::optional<BlockId> Lookup(uint64_t hash);
  void Register(BlockId b, uint64_t hash);
  // The prefix cache's second tier (the prompt cache on flash); null: none. It must outlive the
  // pool or be unset first, and hold blocks of BlockBytes. Not with an observer that mirrors
  // blocks (a shard's): the tier holds only this device's layers.
  void SetTier(KvBlockTier* tier);
  // Forgets every cached (unreferenced) block: their contents can no longer be trusted (a device
  // holding some of their layers lost them).
  void DropCached();

  // The stored rows of position `offset` of block b (KvRowBytes of kv_dim elements).
  uint8_t* KeyRow(BlockId b, int64_t layer, int64_t offset);
  uint8_t* ValueRow(BlockId b, int64_t layer, int64_t offset);

  KvPoolStats Stats() const;
  // Null: nobody is told. The observer must outlive the pool or be unset first.
  void SetObserver(KvBlockObserver* observer) { observer_ = observer; }

 private:
  struct Block {
    int32_t refs = 0;
    std::optional<uint64_t> hash;
    std::list<BlockId>::iterator lru_pos;
    bool in_lru = false;
  };

  BlockId PopFree();
  void PushFree(BlockId b);
  // Drops a cached block's registration and takes it out of the LRU.
  void Evict(BlockId b);
  // Copies `from` into the unreferenced, unregistered `to` and hands over its state.
  void MoveBlock(BlockId from, BlockId to);
  void Shrink(int64_t n_blocks, std::unordered_map<BlockId, BlockId>* moved);
  std::optional<BlockId> LoadFromTier(uint64_t hash);

  int64_t n_layer_, block_size_, n_blocks_;
  KvTypes types_;
  size_t k_row_, v_row_;  // bytes of one position's key row and value row
  SlotArena arena_;       // one slot per block: keys of every layer, then values
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;  // a min-heap: the lowest id goes first
  std::list<BlockId> lru_;     // unreferenced registered blocks, least recently used first
  std::unordered_map<uint64_t, BlockId> by_hash_;
  int64_t used_ = 0;
  int64_t touched_ = 0;
  int64_t prefix_hits_ = 0, prefix_lookups_ = 0;
  KvBlockObserver* observer_ = nullptr;
  KvBlockTier* tier_ = nullptr;
  int64_t tier_hits_ = 0;
};

// Hash of a full block's tokens chained to the hash of everything before it.
uint64_t ChainBlockHash(uint64_t parent, const int32_t* tokens, int64_t n);

}  // namespace sparrow
