#pragma once
// TouchGguf: reads every metadata value through every accessor and every byte of every tensor
// of a parsed file, so that ASan/UBSan see any range the reader got wrong. Shared by the unit
// tests and the fuzz target (header-only: the fuzz target does not link GoogleTest).
// Pure function of the file; thread-safe.
#include <cstdint>

#include "engine/model/gguf_file.h"

namespace sparrow::testing {

// Returns a checksum of everything read so the reads cannot be optimized away.
inline uint64_t TouchGguf(const GgufFile& f) {
  uint64_t sum = f.version() + f.alignment() + f.data_offset() + f.file_size();
  for (const auto& [key, value] : f.metadata()) {
    sum += key.size() + (f.Find(key) == &value ? 1 : 0);
    sum += f.GetString(key).ok() + f.GetUInt(key).ok() + f.GetInt(key).ok();
    sum += f.GetFloat(key).ok() + f.GetBool(key).ok();
    sum += f.GetUIntOr(key, 7).ok() + f.GetFloatOr(key, 7).ok() + f.GetBoolOr(key, true).ok();
    if (auto s = f.GetString(key); s.ok()) {
      for (char c : *s) sum += static_cast<uint8_t>(c);
    }
    auto a = f.GetArray(key);
    if (!a.ok()) continue;
    for (std::string_view s : (*a)->strings) {
      for (char c : s) sum += static_cast<uint8_t>(c);
    }
    if (auto fl = GgufFile::ArrayAsFloats(**a, key); fl.ok()) {
      for (float x : *fl) sum += static_cast<uint64_t>(x == x);
    }
    if (auto in = GgufFile::ArrayAsInts(**a, key); in.ok()) {
      for (int64_t x : *in) sum += static_cast<uint64_t>(x);
    }
  }
  for (const GgufTensorInfo& t : f.tensors()) {
    sum += (f.FindTensor(t.name) != nullptr) + t.rows() + t.row_bytes() + t.n_elements;
    for (uint64_t i = 0; i < t.n_bytes; ++i) sum += t.data[i];
  }
  return sum;
}

}  // namespace sparrow::testing
