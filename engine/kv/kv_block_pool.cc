#include "engine/kv/kv_block_pool.h"

#include <algorithm>
#include <iterator>

#include "engine/common/check.h"

namespace sparrow {

uint64_t ChainBlockHash(uint64_t parent, const int32_t* tokens, int64_t n) {
  // FNV-1a over the parent hash and the token ids, then a final avalanche (splitmix64), so
  // equal hashes mean equal token chains with overwhelming probability.
  uint64_t h = 1469598103934665603ull ^ parent;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint64_t>(n));
  for (int64_t i = 0; i < n; ++i) mix(static_cast<uint32_t>(tokens[i]));
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

int64_t KvBlockPool::BlockBytes(int64_t n_layer, int64_t kv_dim, int64_t block_size) {
  return 2 * n_layer * kv_dim * block_size * static_cast<int64_t>(sizeof(float));
}

KvBlockPool::KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_size, int64_t n_blocks)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_size_(block_size),
      n_blocks_(n_blocks),
      k_(n_blocks * n_layer * block_size * kv_dim),
      v_(n_blocks * n_layer * block_size * kv_dim),
      blocks_(n_blocks) {
  SPARROW_CHECK(n_layer > 0 && kv_dim > 0 && block_size > 0 && n_blocks > 0);
  free_.reserve(n_blocks);
  // Hand out low ids first.
  for (BlockId b = static_cast<BlockId>(n_blocks) - 1; b >= 0; --b) free_.push_back(b);
}

int64_t KvBlockPool::available() const {
  return static_cast<int64_t>(free_.size() + lru_.size());
}

std::optional<BlockId> KvBlockPool::Allocate() {
  BlockId b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();  // evict the least recently used cached prefix block
    lru_.pop_front();
    Block& blk = blocks_[b];
    blk.in_lru = false;
    by_hash_.erase(*blk.hash);
    blk.hash.reset();
  } else {
    return std::nullopt;
  }
  blocks_[b].refs = 1;
  ++used_;
  return b;
}

void KvBlockPool::Retain(BlockId b) {
  Block& blk = blocks_[b];
  if (blk.refs == 0) {
    // Revived from the cache.
    SPARROW_CHECK(blk.in_lru);
    lru_.erase(blk.lru_pos);
    blk.in_lru = false;
    ++used_;
  }
  ++blk.refs;
}

void KvBlockPool::Release(BlockId b) {
  Block& blk = blocks_[b];
  SPARROW_CHECK(blk.refs > 0);
  if (--blk.refs > 0) return;
  --used_;
  if (blk.hash) {
    lru_.push_back(b);
    blk.lru_pos = std::prev(lru_.end());
    blk.in_lru = true;
  } else {
    free_.push_back(b);
  }
}

std::optional<BlockId> KvBlockPool::Lookup(uint64_t hash) {
  ++prefix_lookups_;
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  ++prefix_hits_;
  Retain(it->second);
  return it->second;
}

void KvBlockPool::Register(BlockId b, uint64_t hash) {
  Block& blk = blocks_[b];
  if (blk.hash) return;  // already published
  auto [it, inserted] = by_hash_.emplace(hash, b);
  if (!inserted) return;  // an identical block is cached already; this one stays private
  blk.hash = hash;
}

void KvBlockPool::CopyContents(BlockId src, BlockId dst) {
  const int64_t n = n_layer_ * block_size_ * kv_dim_;
  std::copy_n(&k_[src * n], n, &k_[dst * n]);
  std::copy_n(&v_[src * n], n, &v_[dst * n]);
}

float* KvBlockPool::Key(BlockId b, int64_t layer, int64_t offset) {
  return &k_[((static_cast<int64_t>(b) * n_layer_ + layer) * block_size_ + offset) * kv_dim_];
}

float* KvBlockPool::Value(BlockId b, int64_t layer, int64_t offset) {
  return &v_[((static_cast<int64_t>(b) * n_layer_ + layer) * block_size_ + offset) * kv_dim_];
}

KvPoolStats KvBlockPool::Stats() const {
  KvPoolStats s;
  s.total_blocks = n_blocks_;
  s.used_blocks = used_;
  s.cached_blocks = static_cast<int64_t>(lru_.size());
  s.free_blocks = static_cast<int64_t>(free_.size());
  s.prefix_hits = prefix_hits_;
  s.prefix_lookups = prefix_lookups_;
  return s;
}

}  // namespace sparrow
