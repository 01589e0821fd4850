#include "engine/tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include "engine/tokenizer/byte_encoding.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

using Words = std::vector<std::string>;

// Pre-tokenizes and maps the words back from the byte alphabet to raw text.
Words Split(std::string_view text, PreTokenizerKind kind) {
  Words raw;
  for (const std::string& w : PreTokenize(text, kind)) {
    std::string bytes;
    for (uint32_t c : DecodeUtf8Lossy(w)) {
      auto b = UnicodeToByte(c);
      EXPECT_TRUE(b.has_value()) << "word not in the byte alphabet";
      bytes.push_back(static_cast<char>(b.value_or('?')));
    }
    raw.push_back(bytes);
  }
  return raw;
}

TEST(PreTokenizer, WordsAreByteEncoded) {
  EXPECT_EQ(PreTokenize(" a\n", PreTokenizerKind::kGpt2), (Words{"\xC4\xA0"
                                                                 "a",
                                                                 "\xC4\x8A"}));
  EXPECT_TRUE(PreTokenize("", PreTokenizerKind::kGpt2).empty());
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(Split("Hello world's  test\n\n 123", PreTokenizerKind::kGpt2),
            (Words{"Hello", " world", "'s", " ", " test", "\n\n", " 123"}));
  // Contractions are case-sensitive; trailing whitespace stays together.
  EXPECT_EQ(Split("I'M ok!?  ", PreTokenizerKind::kGpt2),
            (Words{"I", "'", "M", " ok", "!?", "  "}));
}

TEST(PreTokenizer, Llama3) {
  EXPECT_EQ(Split("I'M 12345 ok!!\n\nx", PreTokenizerKind::kLlama3),
            (Words{"I", "'M", " ", "123", "45", " ok", "!!\n\n", "x"}));
  EXPECT_EQ(Split("a \n\n  b", PreTokenizerKind::kLlama3), (Words{"a", " \n\n", " ", " b"}));
}

TEST(PreTokenizer, Qwen2SplitsSingleDigitsAndKeepsRegexQuirks) {
  // "\tx": [^\r\n\p{L}\p{N}]?\p{L}+ takes the tab; whitespace ending in \n is one word.
  EXPECT_EQ(Split("abc 12\t\tx  \n", PreTokenizerKind::kQwen2),
            (Words{"abc", " ", "1", "2", "\t", "\tx", "  \n"}));
  EXPECT_EQ(Split("it'S  ok", PreTokenizerKind::kQwen2), (Words{"it", "'S", " ", " ok"}));
}

TEST(PreTokenizer, DeepseekCoderAppliesRulesInTurn) {
  EXPECT_EQ(Split("Hi \xE4\xB8\x96\xE7\x95\x8C!\n42", PreTokenizerKind::kDeepseekCoder),
            (Words{"Hi", " ", "\xE4\xB8\x96\xE7\x95\x8C", "!", "\n", "4", "2"}));
}

TEST(PreTokenizer, DeepseekLlm) {
  // The punctuation class [!-/:-~...] covers ASCII letters too, so it re-splits "Café".
  EXPECT_EQ(Split("Caf\xC3\xA9 12, ok  ", PreTokenizerKind::kDeepseekLlm),
            (Words{"Caf", "\xC3\xA9", " ", "12", ",", " ok", "  "}));
}

TEST(PreTokenizer, DefaultSplitsPunctuationAndThreeDigitGroups) {
  EXPECT_EQ(Split("a+b=3000!", PreTokenizerKind::kDefault),
            (Words{"a", "+", "b", "=", "300", "0", "!"}));
}

TEST(PreTokenizer, FalconAndStarcoder) {
  EXPECT_EQ(Split("a``b 1234", PreTokenizerKind::kFalcon),
            (Words{"a", "``", "b", " ", "123", "4"}));
  EXPECT_EQ(Split("x12 y", PreTokenizerKind::kStarcoder), (Words{"x", "1", "2", " y"}));
}

TEST(PreTokenizer, Bloom) {
  EXPECT_EQ(Split("Hi, there.", PreTokenizerKind::kBloom), (Words{"Hi", ",", " there", "."}));
}

TEST(PreTokenizer, InvalidUtf8IsReadAsReplacementCharacter) {
  EXPECT_EQ(Split("\xFF"
                  "a",
                  PreTokenizerKind::kGpt2),
            (Words{"\xEF\xBF\xBD", "a"}));
}

TEST(PreTokenizer, LookupNamesAndFlags) {
  auto llama3 = LookupPreTokenizer("llama-bpe");
  ASSERT_TRUE(llama3.ok());
  EXPECT_EQ(llama3->kind, PreTokenizerKind::kLlama3);
  EXPECT_TRUE(llama3->ignore_merges);
  EXPECT_TRUE(llama3->forces_add_bos);
  auto qwen = LookupPreTokenizer("qwen2");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(qwen->kind, PreTokenizerKind::kQwen2);
  EXPECT_FALSE(qwen->clean_spaces);
  EXPECT_EQ(LookupPreTokenizer("")->kind, PreTokenizerKind::kDefault);
  EXPECT_EQ(LookupPreTokenizer("mpt")->kind, PreTokenizerKind::kGpt2);
  EXPECT_EQ(LookupPreTokenizer("refact")->kind, PreTokenizerKind::kStarcoder);
  EXPECT_TRUE(LookupPreTokenizer("chatglm-bpe")->clears_bos);
  auto bad = LookupPreTokenizer("tekken");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bad.status().message().find("'tekken'"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::tokenizer
