#include "engine/tokenizer/detokenize.h"

#include <gtest/gtest.h>

#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow::tokenizer {
namespace {

#define SP "\xE2\x96\x81"

std::string Clean(std::string s) {
  CleanUpSpaces(&s);
  return s;
}

TEST(Detokenize, EscapesSpaces) {
  EXPECT_EQ(EscapeSpmSpaces(" a  b"), SP "a" SP SP "b");
  EXPECT_EQ(EscapeSpmSpaces(""), "");
}

TEST(Detokenize, CleanUpSpaces) {
  EXPECT_EQ(Clean("Hello , world . Ok ? Yes !"), "Hello, world. Ok? Yes!");
  EXPECT_EQ(Clean("a ' b"), "a'b");
  EXPECT_EQ(Clean("it 's I 'm we 're you 've"), "it's I'm we're you've");
  EXPECT_EQ(Clean("do n 't I 'd we 'll"), "do n 't I 'd we 'll");  // these keep the space
  EXPECT_EQ(Clean(" ."), ".");
  EXPECT_EQ(Clean("a  ."), "a .");  // one space per punctuation mark
  EXPECT_EQ(Clean(""), "");
}

TEST(Detokenize, SpmPiecesAndLeadingSpace) {
  // 259 ▁hi  260 ▁there  261 <|x|> (control)
  VocabData d = testing::SpmData({{SP "hi", 0}, {SP "there", 0}, {"<|x|>", 0}});
  d.token_types[261] = 3;
  auto v = Vocab::Create(std::move(d));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Piece(*v, 259, false), " hi");
  EXPECT_EQ(Piece(*v, 261, false), "");
  EXPECT_EQ(Piece(*v, 261, true), "<|x|>");
  EXPECT_EQ(Piece(*v, 3 + 0xC3, false), "\xC3");
  EXPECT_EQ(Piece(*v, -1, false), "");
  EXPECT_EQ(Piece(*v, 262, false), "");

  const std::vector<TokenId> ids = {259, 260};
  EXPECT_EQ(Detokenize(*v, ids, false, false), "hi there");
  const std::vector<TokenId> with_bos = {1, 259, 260, 2};
  EXPECT_EQ(Detokenize(*v, with_bos, false, false), " hi there");  // <s> takes the strip
  EXPECT_EQ(Detokenize(*v, with_bos, true, false), " hi there");   // BOS removed, space kept
  EXPECT_EQ(Detokenize(*v, with_bos, false, true), "<s> hi there</s>");
  const std::vector<TokenId> control = {261, 259};
  EXPECT_EQ(Detokenize(*v, control, false, false), " hi");
}

TEST(Detokenize, BpeCleansSpacesUnlessThePreTokenizerSaysNot) {
  auto gpt2 = Vocab::Create(testing::BpeData({}, {}, "gpt-2"));
  auto qwen = Vocab::Create(testing::BpeData({}, {}, "qwen2"));
  ASSERT_TRUE(gpt2.ok() && qwen.ok());
  const std::vector<TokenId> ids = {'a', ' ', ',', ' ', 'b'};
  EXPECT_EQ(Detokenize(*gpt2, ids, false, false), "a, b");
  EXPECT_EQ(Detokenize(*qwen, ids, false, false), "a , b");
}

}  // namespace
}  // namespace sparrow::tokenizer
