// ChatFormat: what a model's template decides once at load (family or Jinja, tool-call format,
// the markers' token ids), against a hand-built vocabulary and the real templates.
#include "server/chat/chat_format.h"

#include <gtest/gtest.h>

#include "tests/server/chat/template_file.h"
#include "tests/unit/tokenizer/tiny_vocab.h"

namespace sparrow::server {
namespace {

// An SPM vocabulary (<unk> <s> </s>, the byte tokens) with `markers` as control tokens.
std::unique_ptr<Tokenizer> VocabWith(const std::vector<std::string>& markers, bool add_bos = true) {
  std::vector<std::pair<std::string, float>> pieces;
  for (const std::string& m : markers) pieces.emplace_back(m, 0.0f);
  VocabData d = testing::SpmData(pieces);
  for (size_t i = d.token_types.size() - markers.size(); i < d.token_types.size(); ++i) {
    d.token_types[i] = 3;  // control
  }
  d.add_bos = add_bos;
  return testing::MakeTokenizer(std::move(d));
}

TEST(ChatFormatTest, AFamilyNameIsThatFamilyWithItsToolFormat) {
  auto vocab = VocabWith({});
  ASSERT_NE(vocab, nullptr);
  const ChatFormat llama3("llama3", *vocab, "test");
  EXPECT_FALSE(llama3.has_jinja());
  EXPECT_EQ(llama3.family(), ChatTemplate::kLlama3);
  EXPECT_EQ(llama3.tool_format(), ToolCallFormat::kLlama3);
  const ChatFormat mistral("mistral", *vocab, "test");
  EXPECT_EQ(mistral.tool_format(), ToolCallFormat::kMistral);
  const ChatFormat chatml("", *vocab, "test");
  EXPECT_EQ(chatml.family(), ChatTemplate::kChatMl);
  EXPECT_EQ(chatml.tool_format(), ToolCallFormat::kHermes);
}

TEST(ChatFormatTest, RealTemplatesAreCompiledAndTheirToolFormatFound) {
  auto vocab = VocabWith({});
  ASSERT_NE(vocab, nullptr);
  const ChatFormat llama(ReadChatTemplate("meta-llama-Llama-3.1-8B-Instruct.jinja"), *vocab,
                         "test");
  EXPECT_TRUE(llama.has_jinja());
  EXPECT_EQ(llama.family(), ChatTemplate::kLlama3);
  EXPECT_EQ(llama.tool_format(), ToolCallFormat::kLlama3);
  const ChatFormat qwen(ReadChatTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"), *vocab, "test");
  EXPECT_TRUE(qwen.has_jinja());
  EXPECT_EQ(qwen.family(), ChatTemplate::kChatMl);
  EXPECT_EQ(qwen.tool_format(), ToolCallFormat::kHermes);
  const ChatFormat nemo(ReadChatTemplate("mistralai-Mistral-Nemo-Instruct-2407.jinja"), *vocab,
                        "test");
  EXPECT_EQ(nemo.tool_format(), ToolCallFormat::kMistral);
}

TEST(ChatFormatTest, TheTemplateSeesTheVocabularysBosAndEos) {
  const std::string jinja = "{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}";
  // The tokenizer adds BOS itself: the template's own is dropped.
  auto adds_bos = VocabWith({}, true);
  ASSERT_NE(adds_bos, nullptr);
  auto r = ChatFormat(jinja, *adds_bos, "test").Render({{"user", "hi"}}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "[hi]</s>");
  auto no_bos = VocabWith({}, false);
  ASSERT_NE(no_bos, nullptr);
  r = ChatFormat(jinja, *no_bos, "test").Render({{"user", "hi"}}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "<s>[hi]</s>");
}

TEST(ChatFormatTest, VisibleMarkersAreTheVocabularysThinkingAndToolCallTokens) {
  auto vocab = VocabWith({"<think>", "</think>", "<tool_call>", "</tool_call>", "[TOOL_CALLS]"});
  ASSERT_NE(vocab, nullptr);
  const TokenId think = vocab->FindToken("<think>"), end_think = vocab->FindToken("</think>");
  const TokenId call = vocab->FindToken("<tool_call>"), end_call = vocab->FindToken("</tool_call>");
  ASSERT_NE(think, kNoToken);
  ASSERT_NE(call, kNoToken);
  const ChatFormat hermes("chatml", *vocab, "test");
  EXPECT_EQ(hermes.visible_markers(false), (std::vector<int32_t>{think, end_think}));
  EXPECT_EQ(hermes.visible_markers(true), (std::vector<int32_t>{call, end_call, think, end_think}));
  // Mistral's [ARGS] is not in this vocabulary: only the markers it has count.
  const ChatFormat mistral("mistral", *vocab, "test");
  EXPECT_EQ(mistral.visible_markers(true),
            (std::vector<int32_t>{vocab->FindToken("[TOOL_CALLS]"), think, end_think}));
  auto plain = VocabWith({});
  ASSERT_NE(plain, nullptr);
  const ChatFormat none("chatml", *plain, "test");
  EXPECT_TRUE(none.visible_markers(false).empty());
  EXPECT_TRUE(none.visible_markers(true).empty());
}

}  // namespace
}  // namespace sparrow::server
