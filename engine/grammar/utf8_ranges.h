#pragma once
// Lowering of Unicode code point ranges to UTF-8 byte sequences, so a grammar over characters
// becomes a grammar over bytes. Surrogates (U+D800..U+DFFF) are never produced: they are not
// characters and have no valid UTF-8 form. Stateless; thread-safe.
#include <cstdint>
#include <utility>
#include <vector>

namespace sparrow::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// An inclusive code point range.
struct CodeRange {
  uint32_t lo, hi;
};

// A byte sequence pattern: byte i lies in [ranges[i].first, ranges[i].second].
using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;

// Appends patterns whose union is exactly the UTF-8 encodings of [lo, hi] minus surrogates.
void AppendUtf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>* out);

// Sorts and merges `ranges`; with `negate`, returns the complement within [0, kMaxCodePoint].
std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> ranges, bool negate);

// The UTF-8 encoding of one code point (no validation beyond the range).
std::vector<uint8_t> EncodeUtf8(uint32_t cp);

}  // namespace sparrow::grammar
