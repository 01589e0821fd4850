#pragma once
// GgufWriter: builds GGUF v2/v3 images for tests with the engine's encoder (GgufHeader), without
// validating anything (so tests can also write files a reader must reject).
// GgufImage: a built image plus the byte position of every header field, with setters that
// patch single fields to produce malformed files.
// Both are plain values: thread-compatible, no shared state.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_header.h"

namespace sparrow::testing {

// Converts one row of `n` floats to `type` at `dst`; the signature of the kernels' QuantizeRow.
using QuantizeRowFn = std::function<void(TensorType type, const float* src, void* dst, int64_t n)>;

// F32, F16 and BF16 (round to nearest even) by the writer's own code; every other type that
// kernels::CanQuantize accepts through kernels::QuantizeRow; aborts on the rest.
void ConvertRowBuiltin(TensorType type, const float* src, void* dst, int64_t n);
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBf16(float f);

// Bytes per row of `row_len` elements of `type`; 0 for an unknown type or a row length that is
// not a multiple of the block size.
uint64_t RowBytes(TensorType type, uint64_t row_len);

// The field positions of a built image: the header's (engine/model/gguf_header.h) and where the
// tensor data ends.
struct ImageLayout : GgufLayout {
  size_t data_end = 0;  // one past the last tensor's bytes, before trailing padding
};

struct GgufImage {
  std::vector<uint8_t> bytes;
  ImageLayout layout;

  std::span<const uint8_t> span() const { return bytes; }
  // The first `n` bytes, in a buffer of exactly that size (so ASan sees any over-read).
  std::vector<uint8_t> Prefix(size_t n) const;
  Status WriteFile(const std::string& path) const;

  // Malformers: overwrite one field in place. `kv` and `t` index layout.kvs / layout.tensors.
  void PatchU32(size_t pos, uint32_t v);
  void PatchU64(size_t pos, uint64_t v);
  void SetMagic(std::string_view four_bytes);
  void SetVersion(uint32_t v) { PatchU32(4, v); }
  void SetTensorCount(uint64_t n) { PatchU64(8, n); }
  void SetKvCount(uint64_t n) { PatchU64(16, n); }
  void SetKeyLength(size_t kv, uint64_t len) { PatchU64(layout.kvs.at(kv).key_len, len); }
  void SetValueType(size_t kv, uint32_t type) { PatchU32(layout.kvs.at(kv).type, type); }
  // For a string value: its length. For an array value: its element type / element count /
  // the length of its first string element.
  void SetStringLength(size_t kv, uint64_t len) { PatchU64(layout.kvs.at(kv).value, len); }
  void SetArrayElemType(size_t kv, uint32_t type) { PatchU32(layout.kvs.at(kv).value, type); }
  void SetArrayCount(size_t kv, uint64_t n) { PatchU64(layout.kvs.at(kv).value + 4, n); }
  void SetFirstArrayStringLength(size_t kv, uint64_t len) {
    PatchU64(layout.kvs.at(kv).value + 12, len);
  }
  void SetTensorNameLength(size_t t, uint64_t len) { PatchU64(layout.tensors.at(t).name_len, len); }
  void SetTensorNDims(size_t t, uint32_t n) { PatchU32(layout.tensors.at(t).n_dims, n); }
  void SetTensorDim(size_t t, size_t d, uint64_t v) {
    PatchU64(layout.tensors.at(t).dims + 8 * d, v);
  }
  void SetTensorType(size_t t, uint32_t type) { PatchU32(layout.tensors.at(t).type, type); }
  void SetTensorOffset(size_t t, uint64_t offset) { PatchU64(layout.tensors.at(t).offset, offset); }
};

// Builder of one GGUF image in memory: the engine's header encoder (metadata, magic, version,
// alignment: GgufHeader's methods) plus the tensors' bytes. Entries are written in the order they
// were added.
class GgufWriter : public GgufHeader {
 public:
  explicit GgufWriter(uint32_t version = 3) : GgufHeader(version) {}

  uint64_t layout_alignment() const { return alignment(); }

  // GgufHeader's entries, chainable with the tensor methods below.
  // clang-format off
  GgufWriter& AddU8(std::string k, uint8_t v) { return Chain(GgufHeader::AddU8(std::move(k), v)); }
  GgufWriter& AddI8(std::string k, int8_t v) { return Chain(GgufHeader::AddI8(std::move(k), v)); }
  GgufWriter& AddU16(std::string k, uint16_t v) { return Chain(GgufHeader::AddU16(std::move(k), v)); }
  GgufWriter& AddI16(std::string k, int16_t v) { return Chain(GgufHeader::AddI16(std::move(k), v)); }
  GgufWriter& AddU32(std::string k, uint32_t v) { return Chain(GgufHeader::AddU32(std::move(k), v)); }
  GgufWriter& AddI32(std::string k, int32_t v) { return Chain(GgufHeader::AddI32(std::move(k), v)); }
  GgufWriter& AddU64(std::string k, uint64_t v) { return Chain(GgufHeader::AddU64(std::move(k), v)); }
  GgufWriter& AddI64(std::string k, int64_t v) { return Chain(GgufHeader::AddI64(std::move(k), v)); }
  GgufWriter& AddF32(std::string k, float v) { return Chain(GgufHeader::AddF32(std::move(k), v)); }
  GgufWriter& AddF64(std::string k, double v) { return Chain(GgufHeader::AddF64(std::move(k), v)); }
  GgufWriter& AddBool(std::string k, bool v) { return Chain(GgufHeader::AddBool(std::move(k), v)); }
  GgufWriter& AddString(std::string k, std::string_view v) { return Chain(GgufHeader::AddString(std::move(k), v)); }
  GgufWriter& SetAlignment(uint32_t a) { return Chain(GgufHeader::SetAlignment(a)); }
  GgufWriter& AddStringArray(std::string k, const std::vector<std::string>& v) { return Chain(GgufHeader::AddStringArray(std::move(k), v)); }
  GgufWriter& AddRaw(std::string k, uint32_t type_id, std::vector<uint8_t> v) { return Chain(GgufHeader::AddRaw(std::move(k), type_id, std::move(v))); }
  template <typename T> GgufWriter& AddArray(std::string k, std::span<const T> v) { return Chain(GgufHeader::AddArray(std::move(k), v)); }
  template <typename T> GgufWriter& AddArray(std::string k, const std::vector<T>& v) { return Chain(GgufHeader::AddArray(std::move(k), v)); }
  template <typename T> GgufWriter& AddArray(std::string k, std::initializer_list<T> v) { return Chain(GgufHeader::AddArray(std::move(k), v)); }
  // clang-format on

  // A tensor with the given bytes, which are not checked against type and dims. Any type id may
  // be passed as static_cast<TensorType>(id); dims are in ggml order (dims[0] = row length).
  GgufWriter& AddTensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                        std::vector<uint8_t> data);
  // A tensor from f32 values (row-major, dims[0] per row), converted row by row with `quantize`
  // (default: ConvertRowBuiltin). Aborts if the row length does not fit the type's blocks.
  GgufWriter& AddTensorF32(std::string name, TensorType type, std::vector<uint64_t> dims,
                           std::span<const float> values, const QuantizeRowFn& quantize = {});
  bool RemoveTensor(std::string_view name);

  GgufImage Build() const;
  std::vector<uint8_t> Bytes() const { return Build().bytes; }
  Status WriteFile(const std::string& path) const { return Build().WriteFile(path); }

 private:
  struct TensorData {
    std::string name;
    std::vector<uint8_t> data;
  };
  GgufWriter& Chain(GgufHeader&) { return *this; }

  std::vector<TensorData> data_;  // in the header's tensor order
};

}  // namespace sparrow::testing
