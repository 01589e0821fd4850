#pragma once
// ByteReader: bounds-checked little-endian cursor over an untrusted byte range. Every read
// reports Corrupt (naming what was being read and where) instead of running past the end.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, std::string_view what) {
    if (remaining() < sizeof(T)) return Truncated(what, sizeof(T));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  // A GGUF string: u64 length then bytes (not NUL-terminated). The view points into the data.
  Status ReadString(std::string_view* out, std::string_view what) {
    uint64_t len = 0;
    SPARROW_RETURN_IF_ERROR(Read(&len, what));
    if (len > remaining()) {
      return Corrupt(std::string(what) + " at byte " + std::to_string(pos_ - 8) + " claims " +
                     std::to_string(len) + " bytes but only " + std::to_string(remaining()) +
                     " remain in the file");
    }
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status Skip(uint64_t n, std::string_view what) {
    if (n > remaining()) return Truncated(what, n);
    pos_ += n;
    return Status::Ok();
  }

  const uint8_t* here() const { return data_ + pos_; }

 private:
  Status Truncated(std::string_view what, uint64_t need) const {
    return Corrupt("file is truncated: reading " + std::string(what) + " at byte " +
                   std::to_string(pos_) + " needs " + std::to_string(need) + " bytes, " +
                   std::to_string(remaining()) + " remain");
  }

  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace sparrow
