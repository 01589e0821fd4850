#include "engine/tokenizer/byte_encoding.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

TEST(ByteEncoding, PrintableBytesMapToThemselves) {
  EXPECT_EQ(ByteToUnicodeUtf8('a'), "a");
  EXPECT_EQ(ByteToUnicodeUtf8('~'), "~");
  EXPECT_EQ(ByteToUnicodeUtf8(0xE9), "\xC3\xA9");  // é
}

TEST(ByteEncoding, OtherBytesMapPastU0100InOrder) {
  EXPECT_EQ(ByteToUnicodeUtf8(0x00), EncodeUtf8(0x100));
  EXPECT_EQ(ByteToUnicodeUtf8(' '), EncodeUtf8(0x120));   // "Ġ"
  EXPECT_EQ(ByteToUnicodeUtf8('\n'), EncodeUtf8(0x10A));  // "Ċ"
  EXPECT_EQ(ByteToUnicodeUtf8(0x7F), EncodeUtf8(0x121));
  EXPECT_EQ(ByteToUnicodeUtf8(0xAD), EncodeUtf8(0x143));  // "Ń"
}

TEST(ByteEncoding, RoundTripsEveryByte) {
  for (int b = 0; b < 256; ++b) {
    const auto cpts = DecodeUtf8Lossy(ByteToUnicodeUtf8(static_cast<uint8_t>(b)));
    ASSERT_EQ(cpts.size(), 1u);
    EXPECT_EQ(UnicodeToByte(cpts[0]), std::optional<uint8_t>(static_cast<uint8_t>(b)));
  }
}

TEST(ByteEncoding, CodePointsOutsideTheAlphabet) {
  EXPECT_EQ(UnicodeToByte(' '), std::nullopt);
  EXPECT_EQ(UnicodeToByte(0xAD), std::nullopt);
  EXPECT_EQ(UnicodeToByte(0x144), std::nullopt);
  EXPECT_EQ(UnicodeToByte(0x1F600), std::nullopt);
}

TEST(ByteEncoding, EncodesText) {
  std::string out;
  AppendByteEncoded("a b\n", &out);
  EXPECT_EQ(out,
            "a\xC4\xA0"
            "b\xC4\x8A");
}

}  // namespace
}  // namespace sparrow::tokenizer
