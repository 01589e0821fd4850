#include "engine/kv/sequence_kv.h"

#include <algorithm>

#include "engine/common/check.h"

namespace sparrow {

uint8_t* SequenceKv::KeyRow(int64_t layer, int64_t pos) {
  const int64_t bs = pool_->block_size();
  return pool_->KeyRow(blocks_[pos / bs], layer, pos % bs);
}

uint8_t* SequenceKv::ValueRow(int64_t layer, int64_t pos) {
  const int64_t bs = pool_->block_size();
  return pool_->ValueRow(blocks_[pos / bs], layer, pos % bs);
}

int64_t SequenceKv::AttachPrefix(const std::vector<int32_t>& tokens, int64_t max_tokens) {
  SPARROW_CHECK(blocks_.empty());
  const int64_t bs = pool_->block_size();
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  uint64_t parent = 0;
  for (int64_t start = 0; start + bs <= limit; start += bs) {
    const uint64_t h = ChainBlockHash(parent, &tokens[start], bs);
    auto b = pool_->Lookup(h);
    if (!b) break;
    blocks_.push_back(*b);
    hashes_.push_back(h);
    parent = h;
  }
  return static_cast<int64_t>(blocks_.size()) * bs;
}

void SequenceKv::ForkFrom(const SequenceKv& other, int64_t n_positions) {
  SPARROW_CHECK(blocks_.empty() && other.pool_ == pool_);
  const int64_t bs = pool_->block_size();
  const int64_t n = (n_positions + bs - 1) / bs;
  SPARROW_CHECK(n <= other.n_blocks());
  for (int64_t i = 0; i < n; ++i) {
    pool_->Retain(other.blocks_[i]);
    blocks_.push_back(other.blocks_[i]);
  }
  const int64_t published = std::min<int64_t>(n, static_cast<int64_t>(other.hashes_.size()));
  hashes_.assign(other.hashes_.begin(), other.hashes_.begin() + published);
}

bool SequenceKv::Reserve(int64_t n_positions, int64_t write_from) {
  const int64_t bs = pool_->block_size();
  const int64_t have = static_cast<int64_t>(blocks_.size());
  const int64_t need = std::max<int64_t>(0, (n_positions + bs - 1) / bs - have);
  // Shared blocks this write would touch. Published (full) blocks are never written again,
  // so only a shared partial block can be in this range.
  std::vector<int64_t> shared;
  for (int64_t i = std::max<int64_t>(0, write_from / bs); i < have && i * bs < n_positions; ++i) {
    if (pool_->refs(blocks_[i]) > 1) shared.push_back(i);
  }
  if (need + static_cast<int64_t>(shared.size()) > pool_->available()) return false;
  for (int64_t i : shared) {
    auto b = pool_->Allocate();
    SPARROW_CHECK(b.has_value());
    pool_->CopyContents(blocks_[i], *b);
    pool_->Release(blocks_[i]);
    blocks_[i] = *b;
  }
  for (int64_t i = 0; i < need; ++i) {
    auto b = pool_->Allocate();
    SPARROW_CHECK(b.has_value());
    blocks_.push_back(*b);
  }
  return true;
}

void SequenceKv::PublishFullBlocks(const std::vector<int32_t>& tokens, int64_t n_done) {
  const int64_t bs = pool_->block_size();
  const int64_t full = std::min<int64_t>(n_done, static_cast<int64_t>(tokens.size())) / bs;
  for (int64_t i = static_cast<int64_t>(hashes_.size()); i < full && i < n_blocks(); ++i) {
    const uint64_t parent = i == 0 ? 0 : hashes_[i - 1];
    const uint64_t h = ChainBlockHash(parent, &tokens[i * bs], bs);
    pool_->Register(blocks_[i], h);
    hashes_.push_back(h);
  }
}

void SequenceKv::Truncate(int64_t n_positions) {
  SPARROW_CHECK(n_positions >= 0);
  const int64_t bs = pool_->block_size();
  const int64_t keep = (n_positions + bs - 1) / bs;
  SPARROW_CHECK(static_cast<int64_t>(hashes_.size()) <= n_positions / bs);
  while (n_blocks() > keep) {
    pool_->Release(blocks_.back());
    blocks_.pop_back();
  }
}

void SequenceKv::Remap(const std::unordered_map<BlockId, BlockId>& moved) {
  if (moved.empty()) return;
  for (BlockId& b : blocks_) {
    auto it = moved.find(b);
    if (it != moved.end()) b = it->second;
  }
}

void SequenceKv::ReleaseAll() {
  for (BlockId b : blocks_) pool_->Release(b);
  blocks_.clear();
  hashes_.clear();
}

}  // namespace sparrow
