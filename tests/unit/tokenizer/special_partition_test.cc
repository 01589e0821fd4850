#include "engine/tokenizer/special_partition.h"

#include <gtest/gtest.h>

#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow::tokenizer {
namespace {

// Renders fragments as "[id]" for tokens and the text itself otherwise.
std::string Render(std::string_view text, const std::vector<Fragment>& frags) {
  std::string out;
  for (const Fragment& f : frags) {
    if (f.token != kNoToken) {
      out.append("[").append(std::to_string(f.token)).append("]");
    } else {
      out.append("{").append(text.substr(f.offset, f.length)).append("}");
    }
  }
  return out;
}

Vocab MakeVocab(const std::string& name = "") {
  // 259 <|im_end|> control, 260 <tool> user-defined, 261 <tool>x user-defined.
  VocabData d = testing::SpmData({{"<|im_end|>", 0}, {"<tool>", 0}, {"<tool>x", 0}});
  d.token_types[259] = 3;
  d.token_types[260] = 4;
  d.token_types[261] = 4;
  d.name = name;
  auto v = Vocab::Create(std::move(d));
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return std::move(v).value();
}

TEST(SpecialPartition, EmptyTextHasNoFragments) {
  EXPECT_TRUE(PartitionSpecialTokens(MakeVocab(), "", true).empty());
}

TEST(SpecialPartition, ControlTokensOnlyWhenParsingSpecials) {
  const Vocab v = MakeVocab();
  const std::string text = "a<|im_end|>b<s>";
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, false)), "{a<|im_end|>b<s>}");
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, true)), "{a}[259]{b}[1]");
}

TEST(SpecialPartition, UserDefinedTokensAlwaysMatchLongestFirst) {
  const Vocab v = MakeVocab();
  const std::string text = "<tool>x <tool><tool>";
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, false)), "[261]{ }[260][260]");
}

TEST(SpecialPartition, RightStripDropsFollowingSpaces) {
  const Vocab v = MakeVocab("phi-3-mini");
  const std::string text = "x<|im_end|> \n y<|im_end|>  ";
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, true)), "{x}[259]{y}[259]");
}

TEST(SpecialPartition, ControlTokensInLiteralRangesStayText) {
  const Vocab v = MakeVocab();
  // "<|im_end|>" at 1 is the template's; the one at 12 was typed by a user (range [12, 29)).
  const std::string text = "a<|im_end|>b<|im_end|><tool>c<|im_end|>";
  const std::vector<TextRange> user = {{12, 17}};
  // User-defined tokens still match inside the range, as without parse_special.
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, true, user)),
            "{a}[259]{b<|im_end|>}[260]{c}[259]");
  // A match that only straddles the range's edge is refused too.
  const std::vector<TextRange> edge = {{14, 1}};
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, true, edge)),
            "{a}[259]{b<|im_end|>}[260]{c}[259]");
  EXPECT_EQ(Render(text, PartitionSpecialTokens(v, text, true, {})),
            "{a}[259]{b}[259][260]{c}[259]");
}

}  // namespace
}  // namespace sparrow::tokenizer
