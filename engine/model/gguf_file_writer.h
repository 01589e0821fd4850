#pragma once
// GgufFileWriter: streams a GGUF file to disk. Metadata and the tensor table are declared first
// (header()), then tensor data is appended in declaration order, so a multi-gigabyte model never
// has to be held in memory. The file appears under its final name only after Finish() succeeds:
// it is written to PATH.partial and renamed, and a writer destroyed before Finish() removes the
// partial file. Not thread-safe; one writer per file.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/status.h"
#include "engine/common/tensor_type.h"
#include "engine/model/gguf_header.h"

namespace sparrow {

class GgufFileWriter {
 public:
  GgufFileWriter() = default;
  ~GgufFileWriter();
  GgufFileWriter(const GgufFileWriter&) = delete;
  GgufFileWriter& operator=(const GgufFileWriter&) = delete;

  // Metadata, magic and alignment. Only before Begin().
  GgufHeader& header() { return header_; }

  // Declares a tensor (dims in ggml order, dims[0] = row length). Only before Begin().
  // Returns the tensor's byte size; 0 (and nothing declared) when the row length does not fit
  // the type's blocks.
  uint64_t DeclareTensor(std::string_view name, TensorType type, std::vector<uint64_t> dims);

  // Writes the header to PATH.partial; tensor data follows through Append().
  Status Begin(const std::string& path);
  // Appends bytes of the tensors in declaration order; alignment padding is inserted between
  // tensors automatically. Writing more bytes than declared is an error.
  Status Append(const void* data, size_t n);
  // Checks that every declared byte was written, pads the file to the alignment, closes and
  // renames to PATH.
  Status Finish();

  // Bytes of the data section (tensors and the padding between them).
  uint64_t data_bytes() const;

 private:
  Status WriteRaw(const void* data, size_t n);
  Status PadTo(uint64_t alignment);
  // Moves current_ past tensors that are complete.
  void SkipCompleteTensors();

  GgufHeader header_;
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;  // stdio buffer of file_, which the destructor closes first
  uint64_t written_ = 0;      // bytes of the file written so far
  uint64_t data_start_ = 0;
  std::vector<uint64_t> offsets_;  // of each tensor in the data section, fixed by Begin()
  size_t current_ = 0;             // tensor being appended
  uint64_t current_written_ = 0;   // bytes of it so far
};

}  // namespace sparrow
