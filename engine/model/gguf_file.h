#pragma once
// GgufFile: a memory-mapped, fully validated GGUF (v2/v3) file: metadata key/values and the
// tensor table. Every count, length, type, dimension, offset and alignment is checked against
// the file size before use, so a malformed file yields a Corrupt status, never a crash.
// Immutable after Open(); safe to read from many threads.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/common/env.h"
#include "engine/common/result.h"
#include "engine/common/tensor_type.h"

namespace sparrow {

enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
std::string_view GgufValueTypeName(GgufValueType t);

// An array value. Numeric arrays keep their element type and are widened on access;
// string arrays hold views into the mapping.
// Size in bytes of one element of a scalar (non-string, non-array) value type; 0 otherwise.
uint64_t GgufScalarSize(GgufValueType t);

struct GgufArray {
  GgufValueType elem_type = GgufValueType::kU8;
  uint64_t size = 0;
  const uint8_t* data = nullptr;          // raw little-endian elements, numeric arrays only
  std::vector<std::string_view> strings;  // string arrays only
};

struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  // Integers are stored widened; the original type stays in `type`.
  std::variant<uint64_t, int64_t, double, bool, std::string_view, GgufArray> v;

  bool IsInteger() const;
  bool IsFloat() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
};

struct GgufTensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the row length (contiguous)
  uint64_t offset = 0;         // relative to the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping; aligned to the file's alignment

  uint64_t rows() const { return dims.empty() ? 0 : n_elements / dims[0]; }
  uint64_t row_bytes() const { return rows() ? n_bytes / rows() : 0; }
};

class GgufFile {
 public:
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // Maps (through `env`; null: Env::Default()) and validates `path`. Errors name the file and
  // the field at fault.
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path, Env* env = nullptr);
  // Parses an in-memory image (fuzzing, tests). `bytes` must outlive the object.
  static Result<std::unique_ptr<GgufFile>> FromMemory(std::span<const uint8_t> bytes,
                                                      std::string display_name = "<memory>");

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  // True for PowerInfer's sparse variant (magic 'PWRI'; otherwise an ordinary GGUF).
  bool powerinfer() const { return powerinfer_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }
  const uint8_t* base() const { return base_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed accessors. A missing key is NotFound; a present key of the wrong type is Corrupt,
  // naming the key and both types. Integer accessors accept any integer type whose value fits.
  Result<std::string_view> GetString(std::string_view key) const;
  Result<uint64_t> GetUInt(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;  // accepts f32/f64 and integers
  Result<bool> GetBool(std::string_view key) const;
  Result<const GgufArray*> GetArray(std::string_view key) const;
  // Convenience: value or fallback when the key is absent (still Corrupt on wrong type).
  Result<uint64_t> GetUIntOr(std::string_view key, uint64_t fallback) const;
  Result<double> GetFloatOr(std::string_view key, double fallback) const;
  Result<bool> GetBoolOr(std::string_view key, bool fallback) const;

  // Array element access with type checks.
  static Result<std::vector<float>> ArrayAsFloats(const GgufArray& a, std::string_view key);
  static Result<std::vector<int64_t>> ArrayAsInts(const GgufArray& a, std::string_view key);

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  Status Parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  std::unique_ptr<MappedFile> mapping_;  // null for FromMemory
  uint32_t version_ = 0;
  bool powerinfer_ = false;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace sparrow
