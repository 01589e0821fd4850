#include "engine/kv/sequence_kv.h"

#include <algorithm>

#include "engine/common/check.h"

namespace sparrow {

float* SequenceKv::Key(int64_t layer, int64_t pos) {
  const int64_t bs = pool_->block_size();
  return pool_->Key(blocks_[pos / bs], layer, pos % bs);
}

float* SequenceKv::Value(int64_t layer, int64_t pos) {
  const int64_t bs = pool_->block_size();
  return pool_->Value(blocks_[pos / bs], layer, pos % bs);
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

bool SequenceKv::Reserve(int64_t n_positions) {
  const int64_t bs = pool_->block_size();
  const int64_t need = (n_positions + bs - 1) / bs - static_cast<int64_t>(blocks_.size());
  if (need <= 0) return true;
  if (need > pool_->available()) return false;
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

void SequenceKv::ReleaseAll() {
  for (BlockId b : blocks_) pool_->Release(b);
  blocks_.clear();
  hashes_.clear();
}

}  // namespace sparrow
