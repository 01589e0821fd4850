#include "engine/tokenizer/spm_encoder.h"

#include <gtest/gtest.h>

#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow::tokenizer {
namespace {

constexpr TokenId kByte0 = 3;  // <0x00>
#define SP "\xE2\x96\x81"      // U+2581, SentencePiece's space

Vocab MakeVocab() {
  // 259 ▁  260 a  261 b  262 ab  263 ▁ab  264 ba  265 c
  VocabData d = testing::SpmData(
      {{SP, -5}, {"a", -3}, {"b", -3}, {"ab", -2}, {SP "ab", -1}, {"ba", -2.5f}, {"c", -3}});
  auto v = Vocab::Create(std::move(d));
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return std::move(v).value();
}

std::vector<TokenId> Encode(const Vocab& v, std::string_view text) {
  std::vector<TokenId> out;
  SpmEncode(v, text, &out);
  return out;
}

TEST(SpmEncoder, MergesHighestScoreFirst) {
  const Vocab v = MakeVocab();
  EXPECT_EQ(Encode(v, SP "ab"), (std::vector<TokenId>{263}));
  // "ab" (-2) beats "ba" (-2.5) wherever both could merge.
  EXPECT_EQ(Encode(v, "aba"), (std::vector<TokenId>{262, 260}));
  EXPECT_EQ(Encode(v, "bab"), (std::vector<TokenId>{261, 262}));
  EXPECT_EQ(Encode(v, "abab"), (std::vector<TokenId>{262, 262}));
}

TEST(SpmEncoder, EqualScoresMergeLeftmostFirst) {
  VocabData d = testing::SpmData({{"x", -1}, {"xx", -1}});
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Encode(*v, "xxx"), (std::vector<TokenId>{260, 259}));
}

TEST(SpmEncoder, UnknownCharactersFallBackToBytes) {
  const Vocab v = MakeVocab();
  EXPECT_EQ(Encode(v,
                   "a\xC3\xA9"
                   "c"),
            (std::vector<TokenId>{260, kByte0 + 0xC3, kByte0 + 0xA9, 265}));
  // Invalid UTF-8 too: a stray byte is one symbol.
  EXPECT_EQ(Encode(v, "\xFF"), (std::vector<TokenId>{kByte0 + 0xFF}));
  // A truncated sequence at the end is split into its bytes.
  EXPECT_EQ(Encode(v, "a\xE2\x82"), (std::vector<TokenId>{260, kByte0 + 0xE2, kByte0 + 0x82}));
  EXPECT_TRUE(Encode(v, "").empty());
}

TEST(SpmEncoder, MissingByteTokensFallBackToUnknown) {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>", "a"};
  d.token_types = {2, 3, 3, 1};
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Encode(*v, "az"), (std::vector<TokenId>{3, 0}));
}

}  // namespace
}  // namespace sparrow::tokenizer
