#include "engine/tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/tokenizer/reference_data.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::FromHex;
using testing::LoadTokenizerFromPath;
using testing::ModelPath;

std::string Sanitize(std::string_view bytes, bool at_end, size_t* consumed = nullptr) {
  std::string out;
  const size_t n = AppendSanitizedUtf8(bytes, at_end, &out);
  if (consumed) *consumed = n;
  return out;
}

#define FFFD "\xEF\xBF\xBD"

TEST(SanitizeUtf8, KeepsValidText) {
  EXPECT_EQ(Sanitize("a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80", true),
            "a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80");
}

TEST(SanitizeUtf8, HoldsBackAnIncompleteTail) {
  size_t consumed = 0;
  EXPECT_EQ(Sanitize("a\xF0\x9F\x98", false, &consumed), "a");
  EXPECT_EQ(consumed, 1u);
  EXPECT_EQ(Sanitize("a\xF0\x9F\x98", true, &consumed), "a" FFFD FFFD FFFD);
  EXPECT_EQ(consumed, 4u);
}

TEST(SanitizeUtf8, OneReplacementPerStrayByte) {
  EXPECT_EQ(Sanitize("\x80"
                     "a",
                     false),
            FFFD "a");
  EXPECT_EQ(Sanitize("\xE2\x82"
                     "a",
                     false),
            FFFD FFFD "a");
  EXPECT_EQ(Sanitize("\xE1\x8F\xE2\x80\x93", false), FFFD FFFD "\xE2\x80\x93");
  EXPECT_EQ(Sanitize("\xE0\x80"
                     "a",
                     false),
            FFFD FFFD "a");                                             // E0 needs A0..BF next
  EXPECT_EQ(Sanitize("\xED\xA0\x80", false), FFFD FFFD FFFD);           // surrogate
  EXPECT_EQ(Sanitize("\xF4\x90\x80\x80", false), FFFD FFFD FFFD FFFD);  // past U+10FFFF
  EXPECT_EQ(Sanitize("\xC0\xAF\xFF", false), FFFD FFFD FFFD);           // overlong, invalid byte
}

class IncrementalDetokenizerTest : public ::testing::Test {
 protected:
  // Pushes the ids one by one; checks that every output is valid UTF-8 on its own.
  static std::vector<std::string> PushAll(IncrementalDetokenizer& d,
                                          const std::vector<TokenId>& ids) {
    std::vector<std::string> outs;
    for (TokenId id : ids) {
      outs.push_back(d.Push(id));
      std::string check;
      EXPECT_EQ(AppendSanitizedUtf8(outs.back(), true, &check), outs.back().size());
      EXPECT_EQ(check, outs.back()) << "output is not valid UTF-8";
    }
    return outs;
  }
};

TEST_F(IncrementalDetokenizerTest, EmojiFromByteFallback) {
  auto tok = LoadTokenizerFromPath(ModelPath("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  const std::string emoji = "\xF0\x9F\x98\x80";  // 😀, four byte tokens in this vocabulary
  const auto ids = tok->Tokenize("a" + emoji + "!", false);
  IncrementalDetokenizer d(*tok);
  const auto outs = PushAll(d, ids);
  ASSERT_GE(outs.size(), 6u);
  std::string all;
  for (const auto& o : outs) all += o;
  EXPECT_EQ(all, " a" + emoji + "!");
  // The emoji comes out whole, with its last byte token, and nothing before that is partial.
  size_t at = 0;
  while (at < outs.size() && outs[at].find(emoji) == std::string::npos) ++at;
  ASSERT_LT(at, outs.size());
  EXPECT_EQ(outs[at], emoji);
  EXPECT_EQ(outs[at - 1], "");
  EXPECT_EQ(outs[at - 2], "");
  EXPECT_EQ(outs[at - 3], "");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.Flush(), "");
}

TEST_F(IncrementalDetokenizerTest, CjkAndFamilyEmojiRoundTrip) {
  auto tok = LoadTokenizerFromPath(ModelPath("llama-2-tiny-random.gguf"));
  ASSERT_NE(tok, nullptr);
  const std::string text =
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C "  // 你好，世界
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";  // 👨‍👩‍👧
  const auto ids = tok->Tokenize(text, true);
  IncrementalDetokenizer d(*tok);
  std::string all;
  for (const auto& o : PushAll(d, ids)) all += o;
  all += d.Flush();
  EXPECT_EQ(all, " " + text);  // BOS prints as nothing; the SPM prefix space stays
}

TEST_F(IncrementalDetokenizerTest, StrayBytesDoNotBlockTheStream) {
  auto tok = LoadTokenizerFromPath(ModelPath("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  IncrementalDetokenizer d(*tok);
  const TokenId byte0 = tok->FindToken("<0x00>");
  ASSERT_NE(byte0, kNoToken);
  EXPECT_EQ(d.Push(byte0 + 0xE4), "");       // could start a CJK character
  EXPECT_EQ(d.Push(byte0 + 'x'), FFFD "x");  // it cannot any more
  EXPECT_EQ(d.Push(byte0 + 0xC3), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.Flush(), FFFD);
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.Push(tok->bos()), "");  // control tokens print as nothing
  IncrementalDetokenizer special(*tok, /*special=*/true);
  EXPECT_EQ(special.Push(tok->bos()), "<s>");
}

// The goldens record llama.cpp's pieces for generated tokens, and their text with invalid bytes
// shown as U+FFFD: streaming must give exactly that text.
TEST_F(IncrementalDetokenizerTest, MatchesGoldenGeneratedText) {
  int checked = 0;
  for (const char* stem : {"stories260K", "llama-2-tiny-random", "synth-llama-f32",
                           "synth-llama-q4_0", "synth-qwen2-f32", "aidreams260K-f32"}) {
    const std::string json_path = testing::TestdataPath(std::string("golden/") + stem + ".json");
    if (!testing::FileExists(json_path)) continue;
    const auto ref = nlohmann::json::parse(testing::ReadFileOrDie(json_path));
    std::string model = ModelPath(ref["model_file"].get<std::string>());
    if (!testing::FileExists(model))
      model = ModelPath("synthetic/" + ref["model_file"].get<std::string>());
    if (!testing::FileExists(model)) continue;
    auto tok = LoadTokenizerFromPath(model);
    ASSERT_NE(tok, nullptr);
    for (const auto& p : ref["prompts"]) {
      const auto gen = p["generated_tokens"].get<std::vector<TokenId>>();
      std::string pieces;
      for (TokenId id : gen) pieces += tok->piece(id);
      EXPECT_EQ(pieces, FromHex(p["generated_text_hex"].get<std::string>())) << stem;
      IncrementalDetokenizer d(*tok);
      std::string streamed;
      for (const auto& o : PushAll(d, gen)) streamed += o;
      streamed += d.Flush();
      EXPECT_EQ(streamed, p["generated_text"].get<std::string>()) << stem;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace sparrow
