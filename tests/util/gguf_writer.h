#pragma once
// GgufWriter: builds GGUF v2/v3 images for tests, byte for byte as the format lays them out,
// without validating anything (so tests can also write files a reader must reject).
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

// Byte positions (from the start of the image) of the fields of one built image.
struct GgufLayout {
  struct Kv {
    size_t key_len = 0;  // u64 key length; the key bytes follow
    size_t type = 0;     // u32 value type
    size_t value = 0;    // the value: u64 length for strings, u32 elem type for arrays
    size_t end = 0;      // one past the value
  };
  struct Tensor {
    size_t name_len = 0;  // u64 name length
    size_t n_dims = 0;    // u32
    size_t dims = 0;      // n_dims u64 values
    size_t type = 0;      // u32 type id
    size_t offset = 0;    // u64 offset into the data section
    size_t end = 0;
    uint64_t data_offset = 0;  // the offset that was written
    uint64_t data_size = 0;    // bytes of data given for it
  };
  std::vector<Kv> kvs;          // in file order
  std::vector<Tensor> tensors;  // in file order
  size_t header_end = 0;        // end of the tensor infos, before padding
  size_t data_start = 0;        // start of the data section (aligned)
  size_t data_end = 0;          // one past the last tensor's bytes, before trailing padding
};

struct GgufImage {
  std::vector<uint8_t> bytes;
  GgufLayout layout;

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

// Builder of one GGUF image. Entries are written in the order they were added.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  void set_version(uint32_t v) { version_ = v; }
  // "GGUF" unless set ("PWRI": PowerInfer's variant). Must be 4 bytes.
  void set_magic(std::string_view four_bytes) { magic_ = std::string(four_bytes.substr(0, 4)); }
  // Adds a u32 general.alignment entry (at this point in the key order) and lays the data out on
  // that alignment (0 is written as given but laid out as 1). Without it the alignment is 32.
  GgufWriter& SetAlignment(uint32_t alignment);
  uint64_t layout_alignment() const { return alignment_; }

  GgufWriter& AddU8(std::string key, uint8_t v);
  GgufWriter& AddI8(std::string key, int8_t v);
  GgufWriter& AddU16(std::string key, uint16_t v);
  GgufWriter& AddI16(std::string key, int16_t v);
  GgufWriter& AddU32(std::string key, uint32_t v);
  GgufWriter& AddI32(std::string key, int32_t v);
  GgufWriter& AddU64(std::string key, uint64_t v);
  GgufWriter& AddI64(std::string key, int64_t v);
  GgufWriter& AddF32(std::string key, float v);
  GgufWriter& AddF64(std::string key, double v);
  GgufWriter& AddBool(std::string key, bool v);
  GgufWriter& AddString(std::string key, std::string_view v);
  // Numeric arrays; T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t,
  // int64_t, float, double, bool and picks the element type.
  template <typename T>
  GgufWriter& AddArray(std::string key, std::span<const T> values);
  template <typename T>
  GgufWriter& AddArray(std::string key, const std::vector<T>& values) {
    return AddArray(std::move(key), std::span<const T>(values));
  }
  template <typename T>
  GgufWriter& AddArray(std::string key, std::initializer_list<T> values) {
    return AddArray(std::move(key), std::span<const T>(values.begin(), values.size()));
  }
  GgufWriter& AddStringArray(std::string key, const std::vector<std::string>& values);
  // Any type id with pre-encoded value bytes (unknown types, nested arrays).
  GgufWriter& AddRaw(std::string key, uint32_t type_id, std::vector<uint8_t> value_bytes);

  // A tensor with the given bytes, which are not checked against type and dims. Any type id may
  // be passed as static_cast<TensorType>(id); dims are in ggml order (dims[0] = row length).
  GgufWriter& AddTensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                        std::vector<uint8_t> data);
  // A tensor from f32 values (row-major, dims[0] per row), converted row by row with `quantize`
  // (default: ConvertRowBuiltin). Aborts if the row length does not fit the type's blocks.
  GgufWriter& AddTensorF32(std::string name, TensorType type, std::vector<uint64_t> dims,
                           std::span<const float> values, const QuantizeRowFn& quantize = {});

  // Drop an entry (to build files that lack it, or to re-add it with another value).
  // Returns false when there was none.
  bool RemoveKey(std::string_view key);
  bool RemoveTensor(std::string_view name);

  size_t kv_count() const { return kvs_.size(); }
  size_t tensor_count() const { return tensors_.size(); }

  GgufImage Build() const;
  std::vector<uint8_t> Bytes() const { return Build().bytes; }
  Status WriteFile(const std::string& path) const { return Build().WriteFile(path); }

  // Little-endian encoders, for building raw values.
  static void AppendU32(std::vector<uint8_t>& out, uint32_t v);
  static void AppendU64(std::vector<uint8_t>& out, uint64_t v);
  static void AppendString(std::vector<uint8_t>& out, std::string_view s);

 private:
  struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> value;  // encoded
  };
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  GgufWriter& AddEncoded(std::string key, GgufValueType type, std::vector<uint8_t> value);

  uint32_t version_;
  std::string magic_ = "GGUF";
  uint64_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace sparrow::testing
