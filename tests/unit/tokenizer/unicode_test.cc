#include "engine/tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace sparrow::tokenizer {
namespace {

using Cpts = std::vector<uint32_t>;

TEST(Unicode, DecodesValidText) {
  EXPECT_EQ(DecodeUtf8Lossy("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            (Cpts{'a', 0xE9, 0x20AC, 0x1F600}));
  EXPECT_TRUE(DecodeUtf8Lossy("").empty());
}

TEST(Unicode, EachUndecodableByteBecomesOneReplacement) {
  EXPECT_EQ(DecodeUtf8Lossy("\x80"
                            "a"),
            (Cpts{kReplacementChar, 'a'}));
  EXPECT_EQ(DecodeUtf8Lossy("\xE2\x82"), (Cpts{kReplacementChar, kReplacementChar}));
  EXPECT_EQ(DecodeUtf8Lossy("\xC3"), (Cpts{kReplacementChar}));
  EXPECT_EQ(DecodeUtf8Lossy("\xF8"
                            "b"),
            (Cpts{kReplacementChar, 'b'}));
  EXPECT_EQ(DecodeUtf8Lossy("\xC3"
                            "b"),
            (Cpts{kReplacementChar, 'b'}));
}

TEST(Unicode, AcceptsWhatLlamaCppAccepts) {
  // Overlong forms and values past U+10FFFF decode as written (llama.cpp does not check them).
  EXPECT_EQ(DecodeUtf8Lossy(std::string("\xC0\x80", 2)), (Cpts{0}));
  EXPECT_EQ(DecodeUtf8Lossy("\xF4\x90\x80\x80"), (Cpts{0x110000}));
}

TEST(Unicode, EncodesAndReplacesOutOfRange) {
  EXPECT_EQ(EncodeUtf8('A'), "A");
  EXPECT_EQ(EncodeUtf8(0xE9), "\xC3\xA9");
  EXPECT_EQ(EncodeUtf8(0x2581), "\xE2\x96\x81");
  EXPECT_EQ(EncodeUtf8(0x1F680), "\xF0\x9F\x9A\x80");
  EXPECT_EQ(EncodeUtf8(0x110000), "\xEF\xBF\xBD");
  for (uint32_t c : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    EXPECT_EQ(DecodeUtf8Lossy(EncodeUtf8(c)), (Cpts{c}));
  }
}

TEST(Unicode, SequenceLengthFromLeadNibble) {
  EXPECT_EQ(Utf8SequenceLength('a'), 1u);
  EXPECT_EQ(Utf8SequenceLength(0x80), 1u);  // stray continuation byte
  EXPECT_EQ(Utf8SequenceLength(0xC3), 2u);
  EXPECT_EQ(Utf8SequenceLength(0xE2), 3u);
  EXPECT_EQ(Utf8SequenceLength(0xF0), 4u);
  EXPECT_EQ(Utf8SequenceLength(0xFF), 4u);
}

TEST(Unicode, CategoryFlags) {
  EXPECT_TRUE(GetCodepointFlags('A').is_letter());
  EXPECT_TRUE(GetCodepointFlags(0xE9).is_letter());
  EXPECT_TRUE(GetCodepointFlags(0x4E16).is_letter());  // 世
  EXPECT_TRUE(GetCodepointFlags('7').is_number());
  EXPECT_TRUE(GetCodepointFlags(0xBD).is_number());  // ½
  EXPECT_TRUE(GetCodepointFlags('!').is_punctuation());
  EXPECT_TRUE(GetCodepointFlags(0xFF0C).is_punctuation());  // ，
  EXPECT_TRUE(GetCodepointFlags('$').is_symbol());
  EXPECT_TRUE(GetCodepointFlags('~').is_symbol());
  EXPECT_TRUE(GetCodepointFlags(0x1F600).is_symbol());
  EXPECT_TRUE(GetCodepointFlags(0x301).is_mark());
  EXPECT_EQ(GetCodepointFlags(0x200D).category, CodepointFlags::kControl);  // ZWJ is Cf
  EXPECT_EQ(GetCodepointFlags(0x378).category, CodepointFlags::kUndefined);
  EXPECT_EQ(GetCodepointFlags(0x110000).category, CodepointFlags::kUndefined);
  EXPECT_TRUE(GetCodepointFlags(' ').whitespace);
  EXPECT_TRUE(GetCodepointFlags('\n').whitespace);
  EXPECT_TRUE(GetCodepointFlags(0x3000).whitespace);
  EXPECT_TRUE(GetCodepointFlags(0x85).whitespace);
  EXPECT_FALSE(GetCodepointFlags(0x1C).whitespace);  // not White_Space, unlike Python's \s
  EXPECT_FALSE(GetCodepointFlags(0x200B).whitespace);
  EXPECT_FALSE(GetCodepointFlags('a').whitespace);
}

TEST(Unicode, Lowercase) {
  EXPECT_EQ(ToLowerCodepoint('A'), static_cast<uint32_t>('a'));
  EXPECT_EQ(ToLowerCodepoint(0xC4), 0xE4u);
  EXPECT_EQ(ToLowerCodepoint('1'), static_cast<uint32_t>('1'));
  EXPECT_EQ(ToLowerCodepoint(0x110000), 0x110000u);
}

// One code point per code point, as llama.cpp's table: the decomposition's first.
TEST(Unicode, NfdFirstCodepoint) {
  EXPECT_EQ(NfdFirstCodepoint(0xE9), static_cast<uint32_t>('e'));    // e acute
  EXPECT_EQ(NfdFirstCodepoint(0x1E17), static_cast<uint32_t>('e'));  // e macron acute: two marks
  EXPECT_EQ(NfdFirstCodepoint(0xAC00), 0x1100u);                     // Hangul GA: its leading jamo
  EXPECT_EQ(NfdFirstCodepoint('a'), static_cast<uint32_t>('a'));
  EXPECT_EQ(NfdFirstCodepoint(0x4E00), 0x4E00u);
  EXPECT_EQ(NfdFirstCodepoint(0x110000), 0x110000u);
}

}  // namespace
}  // namespace sparrow::tokenizer
