#include "engine/kv/kv_block_pool.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>

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

// Memory comes and goes a chunk at a time: small enough that a small model's pool gives memory
// back in steps, large enough to keep the mappings few (a 7B model's block is 16 MiB anyway).
constexpr size_t kChunkBytes = size_t{1} << 20;

int64_t KvBlockPool::BlockBytes(int64_t n_layer, int64_t kv_dim, int64_t block_size,
                                const KvTypes& types) {
  return n_layer * block_size * KvBytesPerLayerPosition(types, kv_dim);
}

KvBlockPool::KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_size, int64_t n_blocks,
                         KvTypes types)
    : n_layer_(n_layer),
      block_size_(block_size),
      n_blocks_(0),
      types_(types),
      k_row_(KvRowBytes(types.k, kv_dim)),
      v_row_(KvRowBytes(types.v, kv_dim)),
      arena_(static_cast<size_t>(BlockBytes(n_layer, kv_dim, block_size, types)), kChunkBytes) {
  SPARROW_CHECK(n_layer > 0 && kv_dim > 0 && block_size > 0 && n_blocks > 0);
  SPARROW_CHECK(KvCacheTypeFromName(TensorTypeName(types.k)) &&
                KvCacheTypeFromName(TensorTypeName(types.v)));
  std::unordered_map<BlockId, BlockId> none;
  const Status st = Resize(n_blocks, &none);
  SPARROW_CHECK(st.ok());
}

BlockId KvBlockPool::PopFree() {
  std::pop_heap(free_.begin(), free_.end(), std::greater<>());
  const BlockId b = free_.back();
  free_.pop_back();
  return b;
}

void KvBlockPool::PushFree(BlockId b) {
  free_.push_back(b);
  std::push_heap(free_.begin(), free_.end(), std::greater<>());
}

int64_t KvBlockPool::available() const {
  return static_cast<int64_t>(free_.size() + lru_.size());
}

void KvBlockPool::Evict(BlockId b) {
  Block& blk = blocks_[b];
  SPARROW_CHECK(blk.in_lru && blk.refs == 0);
  lru_.erase(blk.lru_pos);
  blk.in_lru = false;
  by_hash_.erase(*blk.hash);
  blk.hash.reset();
}

std::optional<BlockId> KvBlockPool::Allocate() {
  BlockId b;
  if (!free_.empty()) {
    b = PopFree();
  } else if (!lru_.empty()) {
    b = lru_.front();  // evict the least recently used cached prefix block
    Evict(b);
  } else {
    return std::nullopt;
  }
  blocks_[b].refs = 1;
  ++used_;
  touched_ = std::max<int64_t>(touched_, b + 1);
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
    PushFree(b);
  }
}

void KvBlockPool::MoveBlock(BlockId from, BlockId to) {
  CopyContents(from, to);
  Block& src = blocks_[from];
  Block& dst = blocks_[to];
  SPARROW_CHECK(dst.refs == 0 && !dst.hash && !dst.in_lru);
  dst = src;
  if (dst.hash) by_hash_[*dst.hash] = to;
  if (dst.in_lru) *dst.lru_pos = to;
  src = Block{};
}

Status KvBlockPool::Resize(int64_t n_blocks, std::unordered_map<BlockId, BlockId>* moved) {
  moved->clear();
  if (n_blocks < 1)
    return InvalidArgument("a KV pool needs at least 1 block, not " + std::to_string(n_blocks));
  if (n_blocks > n_blocks_) {
    SPARROW_RETURN_IF_ERROR(arena_.Reserve(n_blocks));
    blocks_.resize(n_blocks);
    for (int64_t b = n_blocks_; b < n_blocks; ++b) PushFree(static_cast<BlockId>(b));
    n_blocks_ = n_blocks;
    if (observer_) observer_->OnResize(n_blocks);
    return Status::Ok();
  }
  if (n_blocks == n_blocks_) return Status::Ok();
  if (used_ > n_blocks) {
    return ResourceExhausted(std::to_string(used_) + " KV blocks are in use; the pool cannot " +
                             "shrink to " + std::to_string(n_blocks) + " before they are freed");
  }
  Shrink(n_blocks, moved);
  if (observer_) observer_->OnResize(n_blocks);
  return arena_.Reserve(n_blocks);  // unmapping does not fail
}

void KvBlockPool::Shrink(int64_t n_blocks, std::unordered_map<BlockId, BlockId>* moved) {
  const auto end = static_cast<BlockId>(n_blocks);
  // Room below the new end: free blocks, then cached ones, least recently used first.
  std::vector<BlockId> holes;
  for (BlockId b : free_) {
    if (b < end) holes.push_back(b);
  }
  std::vector<BlockId> low_cached;
  for (BlockId b : lru_) {
    if (b < end) low_cached.push_back(b);
  }
  free_.clear();
  size_t next_hole = 0, next_cached = 0;
  auto take_hole = [&]() -> std::optional<BlockId> {
    if (next_hole < holes.size()) return holes[next_hole++];
    return std::nullopt;
  };
  // Referenced blocks above the end must move; used_ <= n_blocks guarantees room.
  for (BlockId b = end; b < static_cast<BlockId>(n_blocks_); ++b) {
    if (blocks_[b].refs == 0) continue;
    std::optional<BlockId> to = take_hole();
    if (!to) {
      SPARROW_CHECK(next_cached < low_cached.size());
      to = low_cached[next_cached++];
      Evict(*to);
    }
    MoveBlock(b, *to);
    (*moved)[b] = *to;
  }
  // Cached blocks above the end: the most recently used keep their place while holes remain.
  std::vector<BlockId> high_cached;
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (*it >= end) high_cached.push_back(*it);
  }
  for (BlockId b : high_cached) {
    if (auto to = take_hole()) {
      MoveBlock(b, *to);
    } else {
      Evict(b);
    }
  }
  for (size_t i = next_hole; i < holes.size(); ++i) free_.push_back(holes[i]);
  std::make_heap(free_.begin(), free_.end(), std::greater<>());
  blocks_.resize(n_blocks);
  n_blocks_ = n_blocks;
  touched_ = std::min(touched_, n_blocks);
}

std::optional<BlockId> KvBlockPool::Lookup(uint64_t hash) {
  ++prefix_lookups_;
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return LoadFromTier(hash);
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
  if (tier_) tier_->Save(hash, static_cast<const uint8_t*>(arena_.slot(b)));
}

void KvBlockPool::SetTier(KvBlockTier* tier) {
  SPARROW_CHECK(tier == nullptr ||
                tier->block_bytes() == static_cast<int64_t>(arena_.slot_bytes()));
  tier_ = tier;
}

std::optional<BlockId> KvBlockPool::LoadFromTier(uint64_t hash) {
  // Asked first, so that a miss evicts no cached block for nothing.
  if (tier_ == nullptr || !tier_->Contains(hash)) return std::nullopt;
  const std::optional<BlockId> b = Allocate();
  if (!b) return std::nullopt;
  if (!tier_->Load(hash, static_cast<uint8_t*>(arena_.slot(*b)))) {
    Release(*b);  // unregistered: back to the free list
    return std::nullopt;
  }
  blocks_[*b].hash = hash;
  by_hash_[hash] = *b;
  ++prefix_hits_;
  ++tier_hits_;
  return b;
}

void KvBlockPool::DropCached() {
  while (!lru_.empty()) {
    const BlockId b = lru_.front();
    Evict(b);
    PushFree(b);
  }
}

void KvBlockPool::CopyContents(BlockId src, BlockId dst) {
  std::memcpy(arena_.slot(dst), arena_.slot(src), arena_.slot_bytes());
  if (observer_) observer_->OnCopy(src, dst);
}

uint8_t* KvBlockPool::KeyRow(BlockId b, int64_t layer, int64_t offset) {
  auto* base = static_cast<uint8_t*>(arena_.slot(b));
  return base + static_cast<size_t>(layer * block_size_ + offset) * k_row_;
}

uint8_t* KvBlockPool::ValueRow(BlockId b, int64_t layer, int64_t offset) {
  auto* base =
      static_cast<uint8_t*>(arena_.slot(b)) + static_cast<size_t>(n_layer_ * block_size_) * k_row_;
  return base + static_cast<size_t>(layer * block_size_ + offset) * v_row_;
}

KvPoolStats KvBlockPool::Stats() const {
  KvPoolStats s;
  s.total_blocks = n_blocks_;
  s.used_blocks = used_;
  s.cached_blocks = static_cast<int64_t>(lru_.size());
  s.free_blocks = static_cast<int64_t>(free_.size());
  s.prefix_hits = prefix_hits_;
  s.prefix_lookups = prefix_lookups_;
  s.mapped_bytes = static_cast<int64_t>(arena_.mapped_bytes());
  s.touched_blocks = touched_;
  s.tier_hits = tier_hits_;
  return s;
}

}  // namespace sparrow
