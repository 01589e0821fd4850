#pragma once
// GgufStreamWriter: writes a GGUF v3 file whose metadata and tensor table are declared first
// and whose tensor data is then appended in declaration order, so a multi-gigabyte model never
// has to be held in memory. The file appears under its final name only after Finish() succeeds
// (it is written to PATH.partial and renamed). Not thread-safe; one writer per file.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"
#include "engine/model/gguf_file.h"

namespace sparrow::tools {

class GgufStreamWriter {
 public:
  GgufStreamWriter() = default;
  ~GgufStreamWriter();
  GgufStreamWriter(const GgufStreamWriter&) = delete;
  GgufStreamWriter& operator=(const GgufStreamWriter&) = delete;

  // PowerInfer's sparse variant: the file starts with 'PWRI' instead of 'GGUF' (the rest is an
  // ordinary GGUF v3). Only before Begin().
  void UsePowerInferMagic() { pwri_magic_ = true; }

  // Metadata, written in the order added. Only before Begin().
  void AddString(std::string_view key, std::string_view value);
  void AddU32(std::string_view key, uint32_t value);
  void AddF32(std::string_view key, float value);
  // Copies a value read from another GGUF file (scalars, numeric and string arrays).
  Status AddCopy(std::string_view key, const GgufValue& value);

  // Declares a tensor (dims in ggml order, dims[0] = row length). Only before Begin().
  // Returns the tensor's byte size; 0 when the row length does not fit the type's blocks.
  uint64_t DeclareTensor(std::string_view name, TensorType type, std::vector<uint64_t> dims);

  // Writes the header to PATH.partial; tensor data follows through Append().
  Status Begin(const std::string& path);
  // Appends bytes of the tensors in declaration order; alignment padding is inserted between
  // tensors automatically. Writing more bytes than declared is an error.
  Status Append(const void* data, size_t n);
  // Checks that every declared byte was written, closes and renames to PATH.
  Status Finish();

  uint64_t data_bytes() const { return data_size_; }

 private:
  struct TensorEntry {
    std::string name;
    TensorType type;
    std::vector<uint64_t> dims;
    uint64_t bytes = 0;
    uint64_t offset = 0;
  };
  Status WriteRaw(const void* data, size_t n);
  Status PadTo(uint64_t alignment);

  bool pwri_magic_ = false;
  std::vector<uint8_t> kv_bytes_;
  uint64_t kv_count_ = 0;
  std::vector<TensorEntry> tensors_;
  uint64_t data_size_ = 0;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;  // stdio buffer of file_, which the destructor closes first
  uint64_t written_ = 0;      // bytes of the file written so far
  uint64_t data_start_ = 0;
  size_t current_ = 0;            // tensor being appended
  uint64_t current_written_ = 0;  // bytes of it so far
};

}  // namespace sparrow::tools
