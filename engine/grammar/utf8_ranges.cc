#include "engine/grammar/utf8_ranges.h"

#include <algorithm>

namespace sparrow::grammar {
namespace {

int EncodedLength(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

// [lo, hi] share one encoded length. A range is emitted as one pattern once, for every
// continuation position, it either keeps the same higher bits or covers whole blocks of the
// lower ones; otherwise it is cut at a block boundary and each half tried again.
void SplitSameLength(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>* out) {
  const int n = EncodedLength(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t low_bits = (1u << (6 * i)) - 1;
    if ((lo & ~low_bits) == (hi & ~low_bits)) continue;
    if ((lo & low_bits) != 0) {
      SplitSameLength(lo, lo | low_bits, out);
      SplitSameLength((lo | low_bits) + 1, hi, out);
      return;
    }
    if ((hi & low_bits) != low_bits) {
      SplitSameLength(lo, (hi & ~low_bits) - 1, out);
      SplitSameLength(hi & ~low_bits, hi, out);
      return;
    }
  }
  const std::vector<uint8_t> a = EncodeUtf8(lo), b = EncodeUtf8(hi);
  ByteRangeSeq seq;
  for (size_t k = 0; k < a.size(); ++k) seq.push_back({a[k], b[k]});
  out->push_back(std::move(seq));
}

}  // namespace

std::vector<uint8_t> EncodeUtf8(uint32_t cp) {
  if (cp < 0x80) return {static_cast<uint8_t>(cp)};
  if (cp < 0x800) {
    return {static_cast<uint8_t>(0xC0 | (cp >> 6)), static_cast<uint8_t>(0x80 | (cp & 0x3F))};
  }
  if (cp < 0x10000) {
    return {static_cast<uint8_t>(0xE0 | (cp >> 12)),
            static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)),
            static_cast<uint8_t>(0x80 | (cp & 0x3F))};
  }
  return {static_cast<uint8_t>(0xF0 | (cp >> 18)), static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F)),
          static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)),
          static_cast<uint8_t>(0x80 | (cp & 0x3F))};
}

void AppendUtf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>* out) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // cut the surrogates out
    if (lo < 0xD800) AppendUtf8Sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) AppendUtf8Sequences(0xE000, hi, out);
    return;
  }
  constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  uint32_t start = lo;
  for (uint32_t end : kLengthEnds) {
    if (start > hi) break;
    if (start > end) continue;
    const uint32_t stop = std::min(hi, end);
    SplitSameLength(start, stop, out);
    start = stop + 1;
  }
}

std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  std::vector<CodeRange> merged;
  for (const CodeRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (!negate) return merged;
  std::vector<CodeRange> complement;
  uint32_t next = 0;
  for (const CodeRange& r : merged) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
  return complement;
}

}  // namespace sparrow::grammar
