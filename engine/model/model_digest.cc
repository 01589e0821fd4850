#include "engine/model/model_digest.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace sparrow {

namespace {

// FNV-1a, 64-bit: not cryptographic; the check guards against mistakes, not attackers (the
// admin key does that).
uint64_t Fnv(uint64_t h, const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string ModelDigest(const GgufFile& file) {
  const uint64_t size = file.file_size();
  const uint8_t* base = file.base();
  uint64_t h = 0xcbf29ce484222325ULL;
  h = Fnv(h, reinterpret_cast<const uint8_t*>(&size), sizeof(size));
  const uint64_t header = std::min(file.data_offset(), size);
  h = Fnv(h, base, header);
  constexpr uint64_t kSamples = 64, kPage = 4096;
  const uint64_t data = size - header;
  for (uint64_t i = 0; i < kSamples && data > 0; ++i) {
    const uint64_t at = header + data / kSamples * i;
    h = Fnv(h, base + at, std::min(kPage, size - at));
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace sparrow
