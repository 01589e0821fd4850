#pragma once
// KvCache: where the forward pass keeps the keys and values of one sequence's past positions.
// The runtime only asks for a position's row, so a paged cache (block table per sequence)
// can stand in for the contiguous one without touching the forward pass. Rows are stored in
// the cache's element types (KvTypes: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1), written
// with llama.cpp's rounding.
// Not thread-safe for writes; concurrent reads of distinct positions are fine.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"

namespace sparrow {

// The element types of the keys and the values (llama.cpp's --cache-type-k / --cache-type-v).
// F32 unless told: the tests' references are f32; sparrowd and the CLI default to f16, as
// llama.cpp does.
struct KvTypes {
  TensorType k = TensorType::kF32;
  TensorType v = TensorType::kF32;
  bool operator==(const KvTypes&) const = default;
};

// llama.cpp's default.
inline constexpr KvTypes kF16Kv{TensorType::kF16, TensorType::kF16};

// Bytes of one stored row of `n` elements of `type`.
size_t KvRowBytes(TensorType type, int64_t n);
// Bytes one position takes in one layer: a key row and a value row of kv_dim elements.
int64_t KvBytesPerLayerPosition(const KvTypes& types, int64_t kv_dim);
// Both types storable (KvCacheTypeFromName's list) and every head's row a whole number of
// blocks (a quantized row holds heads of head_dim elements, each read on its own).
Status CheckKvTypes(const KvTypes& types, int64_t head_dim);
// Writes x[0..n) as a row of `type` at dst, rounded as llama.cpp's CPU backend rounds when it
// copies into its cache (kernels/kv_quantize.h).
void StoreKvRow(TensorType type, const float* x, uint8_t* dst, int64_t n);

class KvCache {
 public:
  virtual ~KvCache() = default;
  // Positions this cache can hold for the sequence.
  virtual int64_t capacity() const = 0;
  virtual KvTypes types() const = 0;
  // The stored row of kv_dim elements for (layer, pos), KvRowBytes(types().k or .v, kv_dim)
  // bytes; valid for pos < capacity().
  virtual uint8_t* KeyRow(int64_t layer, int64_t pos) = 0;
  virtual uint8_t* ValueRow(int64_t layer, int64_t pos) = 0;
  // A paged cache's block table (position p lives in block_table()[p / block_size()]), which a
  // device computing other layers of the same sequence mirrors; empty for other caches.
  virtual std::span<const int32_t> block_table() const { return {}; }
  virtual int64_t block_size() const { return 0; }
};

// One preallocated slab: [layer][pos] rows for keys and the same for values.
class ContiguousKvCache final : public KvCache {
 public:
  // SPARROW_CHECKs that the types can hold rows of kv_dim elements.
  ContiguousKvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim, KvTypes types = {});

  int64_t capacity() const override { return n_ctx_; }
  KvTypes types() const override { return types_; }
  uint8_t* KeyRow(int64_t layer, int64_t pos) override {
    return &k_[static_cast<size_t>(layer * n_ctx_ + pos) * k_row_];
  }
  uint8_t* ValueRow(int64_t layer, int64_t pos) override {
    return &v_[static_cast<size_t>(layer * n_ctx_ + pos) * v_row_];
  }
  size_t bytes() const { return k_.size() + v_.size(); }

 private:
  int64_t n_ctx_;
  KvTypes types_;
  size_t k_row_, v_row_;
  std::vector<uint8_t> k_;
  std::vector<uint8_t> v_;
};

}  // namespace sparrow
