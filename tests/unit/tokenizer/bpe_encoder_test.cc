#include "engine/tokenizer/bpe_encoder.h"

#include <gtest/gtest.h>

#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow::tokenizer {
namespace {

#define G "\xC4\xA0"  // "Ġ", the byte alphabet's space

std::vector<TokenId> Encode(const Vocab& v, std::string_view text) {
  std::vector<TokenId> out;
  BpeEncode(v, text, &out);
  return out;
}

TEST(BpeEncoder, MergesLowestRankFirst) {
  // 256 bc  257 ab  258 abc  259 Ġa
  auto v = Vocab::Create(testing::BpeData({"bc", "ab", "abc", G "a"}, {"b c", "a b", G " a"}));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  // "b c" has rank 0, so "abc" ends as a + bc even though "ab" and "abc" are tokens.
  EXPECT_EQ(Encode(*v, "abc"), (std::vector<TokenId>{'a', 256}));
  EXPECT_EQ(Encode(*v, "ab"), (std::vector<TokenId>{257}));
  // Words are merged separately: " a" is one word.
  EXPECT_EQ(Encode(*v, "b a"), (std::vector<TokenId>{'b', 259}));
  EXPECT_TRUE(Encode(*v, "").empty());
}

TEST(BpeEncoder, IgnoreMergesTakesWholeWordTokens) {
  auto plain = Vocab::Create(testing::BpeData({"abc"}, {}, "gpt-2"));
  auto llama3 = Vocab::Create(testing::BpeData({"abc"}, {}, "llama-bpe"));
  ASSERT_TRUE(plain.ok() && llama3.ok());
  EXPECT_EQ(Encode(*plain, "abc"), (std::vector<TokenId>{'a', 'b', 'c'}));
  EXPECT_EQ(Encode(*llama3, "abc"), (std::vector<TokenId>{256}));
}

TEST(BpeEncoder, MultiByteCharactersUseTheByteAlphabet) {
  auto v = Vocab::Create(testing::BpeData({}, {}));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Encode(*v, "\xC3\xA9"), (std::vector<TokenId>{0xC3, 0xA9}));
}

TEST(BpeEncoder, SymbolsThatAreNoTokenKeepOnlyTheirSingleByteTokens) {
  // Only "a" and "Ġ" exist: " é" is "Ġ" + "Ã" + "©"; the last two are no tokens and no single
  // byte of theirs is one either, so they vanish (llama.cpp drops them the same way).
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  d.tokens = {"a", G};
  d.has_merges = true;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Encode(*v, "a \xC3\xA9"), (std::vector<TokenId>{0, 1}));
}

}  // namespace
}  // namespace sparrow::tokenizer
