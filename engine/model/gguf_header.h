#pragma once
// GgufHeader: everything of a GGUF file before its tensor data (magic, version, metadata in the
// order added, the tensor table with each tensor's offset), encoded byte for byte as the format
// lays it out. It is the project's one encoder of the format: GgufFileWriter streams model and
// profile files with it, and the tests' image builder (tests/util/gguf_writer.h) makes valid and
// malformed files from it. It checks nothing it need not compute, so tests can also encode files
// a reader must reject. A plain value: thread-compatible.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"
#include "engine/model/gguf_file.h"

namespace sparrow {

// Byte positions (from the start of the file) of the fields of one encoded header.
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
    uint64_t data_size = 0;    // bytes declared for it
  };
  std::vector<Kv> kvs;          // in file order
  std::vector<Tensor> tensors;  // in file order
  size_t header_end = 0;        // end of the tensor infos, before padding
  size_t data_start = 0;        // start of the data section (aligned)
};

// Bytes of a tensor of `type` and `dims` (ggml order, dims[0] = row length); 0 for an unknown
// type, no dims, or a row length that is not a whole number of the type's blocks.
uint64_t GgufTensorBytes(TensorType type, std::span<const uint64_t> dims);

class GgufHeader {
 public:
  explicit GgufHeader(uint32_t version = 3) : version_(version) {}

  void set_version(uint32_t v) { version_ = v; }
  // "GGUF" unless set ("PWRI": PowerInfer's variant). Only the first 4 bytes count.
  void set_magic(std::string_view four_bytes);
  // Adds a u32 general.alignment entry (at this point in the key order) and lays the data out on
  // that alignment (0 is written as given but laid out as 1). Without it the alignment is 32.
  GgufHeader& SetAlignment(uint32_t alignment);
  uint64_t alignment() const { return alignment_; }

  GgufHeader& AddU8(std::string key, uint8_t v);
  GgufHeader& AddI8(std::string key, int8_t v);
  GgufHeader& AddU16(std::string key, uint16_t v);
  GgufHeader& AddI16(std::string key, int16_t v);
  GgufHeader& AddU32(std::string key, uint32_t v);
  GgufHeader& AddI32(std::string key, int32_t v);
  GgufHeader& AddU64(std::string key, uint64_t v);
  GgufHeader& AddI64(std::string key, int64_t v);
  GgufHeader& AddF32(std::string key, float v);
  GgufHeader& AddF64(std::string key, double v);
  GgufHeader& AddBool(std::string key, bool v);
  GgufHeader& AddString(std::string key, std::string_view v);
  // Numeric arrays; T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t,
  // int64_t, float, double, bool and picks the element type.
  template <typename T>
  GgufHeader& AddArray(std::string key, std::span<const T> values);
  template <typename T>
  GgufHeader& AddArray(std::string key, const std::vector<T>& values) {
    return AddArray(std::move(key), std::span<const T>(values));
  }
  template <typename T>
  GgufHeader& AddArray(std::string key, std::initializer_list<T> values) {
    return AddArray(std::move(key), std::span<const T>(values.begin(), values.size()));
  }
  GgufHeader& AddStringArray(std::string key, const std::vector<std::string>& values);
  // Any type id with pre-encoded value bytes (unknown types, nested arrays).
  GgufHeader& AddRaw(std::string key, uint32_t type_id, std::vector<uint8_t> value_bytes);
  // A value read from another GGUF file (scalars, numeric and string arrays), in its own width.
  Status AddCopy(std::string_view key, const GgufValue& value);

  // A tensor of `bytes` bytes, not checked against type and dims (any type id may be passed as
  // static_cast<TensorType>(id)). Tensors are laid out in the order added, each on the alignment.
  GgufHeader& AddTensorInfo(std::string name, TensorType type, std::vector<uint64_t> dims,
                            uint64_t bytes);

  // Drop an entry (to encode files that lack it). Returns false when there was none.
  bool RemoveKey(std::string_view key);
  bool RemoveTensor(std::string_view name);

  size_t kv_count() const { return kvs_.size(); }
  size_t tensor_count() const { return tensors_.size(); }
  const std::string& tensor_name(size_t i) const { return tensors_.at(i).name; }
  uint64_t tensor_bytes(size_t i) const { return tensors_.at(i).bytes; }
  // Offset of tensor i in the data section (aligned).
  uint64_t tensor_offset(size_t i) const;

  // The header followed by the zero padding up to the data section, which starts right after.
  std::vector<uint8_t> Encode(GgufLayout* layout = nullptr) const;

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
    uint64_t bytes;
  };
  GgufHeader& AddEncoded(std::string key, GgufValueType type, std::vector<uint8_t> value);
  uint64_t AlignUp(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t version_;
  std::string magic_ = "GGUF";
  uint64_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace sparrow
