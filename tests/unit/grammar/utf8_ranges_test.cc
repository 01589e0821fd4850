#include "engine/grammar/utf8_ranges.h"

#include <gtest/gtest.h>

#include <random>

namespace sparrow::grammar {
namespace {

bool AnyMatches(const std::vector<ByteRangeSeq>& seqs, const std::vector<uint8_t>& bytes) {
  for (const ByteRangeSeq& s : seqs) {
    if (s.size() != bytes.size()) continue;
    bool all = true;
    for (size_t i = 0; i < s.size() && all; ++i) {
      all = bytes[i] >= s[i].first && bytes[i] <= s[i].second;
    }
    if (all) return true;
  }
  return false;
}

void ExpectExact(uint32_t lo, uint32_t hi) {
  std::vector<ByteRangeSeq> seqs;
  AppendUtf8Sequences(lo, hi, &seqs);
  for (uint32_t cp = 0; cp <= kMaxCodePoint; cp += (cp < 0x20000 ? 1 : 97)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const bool in = cp >= lo && cp <= hi;
    ASSERT_EQ(AnyMatches(seqs, EncodeUtf8(cp)), in)
        << std::hex << "cp " << cp << " range " << lo << ".." << hi;
  }
  // No pattern accepts a byte string that is not the encoding of a character in the range.
  for (uint32_t a = 0; a < 256; ++a) {
    for (uint32_t b = 0; b < 256; ++b) {
      const std::vector<uint8_t> two = {static_cast<uint8_t>(a), static_cast<uint8_t>(b)};
      if (!AnyMatches(seqs, two)) continue;
      const uint32_t cp = ((a & 0x1F) << 6) | (b & 0x3F);
      ASSERT_EQ(EncodeUtf8(cp), two);
      ASSERT_TRUE(cp >= lo && cp <= hi);
    }
  }
}

TEST(Utf8RangesTest, PatternsCoverExactlyTheRange) {
  ExpectExact(0, kMaxCodePoint);
  ExpectExact('a', 'z');
  ExpectExact(0x7F, 0x80);
  ExpectExact(0x7FF, 0x800);
  ExpectExact(0x123, 0x4567);
  ExpectExact(0xD000, 0xE100);  // spans the surrogates
  ExpectExact(0xFFFF, 0x10000);
  ExpectExact(0x1F600, 0x1F64F);
}

TEST(Utf8RangesTest, RandomRanges) {
  std::mt19937 rng(7);
  for (int i = 0; i < 6; ++i) {
    uint32_t a = rng() % 0x20000, b = rng() % 0x20000;
    if (a > b) std::swap(a, b);
    ExpectExact(a, b);
  }
}

TEST(Utf8RangesTest, NegationComplements) {
  const auto r = NormalizeRanges({{'b', 'd'}, {'a', 'a'}, {'x', 'z'}}, true);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].lo, 0u);
  EXPECT_EQ(r[0].hi, uint32_t{'a' - 1});
  EXPECT_EQ(r[1].lo, uint32_t{'e'});
  EXPECT_EQ(r[1].hi, uint32_t{'w'});
  EXPECT_EQ(r[2].lo, uint32_t{'z' + 1});
  EXPECT_EQ(r[2].hi, kMaxCodePoint);
}

}  // namespace
}  // namespace sparrow::grammar
