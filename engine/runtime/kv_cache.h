#pragma once
// KvCache: where the forward pass keeps the keys and values of one sequence's past positions.
// The runtime only asks for a position's row, so a paged cache (block table per sequence)
// can stand in for the contiguous one without touching the forward pass.
// Not thread-safe for writes; concurrent reads of distinct positions are fine.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sparrow {

class KvCache {
 public:
  virtual ~KvCache() = default;
  // Positions this cache can hold for the sequence.
  virtual int64_t capacity() const = 0;
  // kv_dim floats for (layer, pos); valid for pos < capacity().
  virtual float* Key(int64_t layer, int64_t pos) = 0;
  virtual float* Value(int64_t layer, int64_t pos) = 0;
  // A paged cache's block table (position p lives in block_table()[p / block_size()]), which a
  // device computing other layers of the same sequence mirrors; empty for other caches.
  virtual std::span<const int32_t> block_table() const { return {}; }
  virtual int64_t block_size() const { return 0; }
};

// One preallocated f32 slab: [layer][pos][kv_dim] for keys and the same for values.
class ContiguousKvCache final : public KvCache {
 public:
  ContiguousKvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim)
      : n_ctx_(n_ctx),
        kv_dim_(kv_dim),
        k_(n_layer * n_ctx * kv_dim),
        v_(n_layer * n_ctx * kv_dim) {}

  int64_t capacity() const override { return n_ctx_; }
  float* Key(int64_t layer, int64_t pos) override { return &k_[(layer * n_ctx_ + pos) * kv_dim_]; }
  float* Value(int64_t layer, int64_t pos) override {
    return &v_[(layer * n_ctx_ + pos) * kv_dim_];
  }
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

 private:
  int64_t n_ctx_;
  int64_t kv_dim_;
  std::vector<float> k_;
  std::vector<float> v_;
};

}  // namespace sparrow
