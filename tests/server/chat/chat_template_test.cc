#include "server/chat/chat_template.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi"}};

TEST(ChatTemplateTest, DetectsFamiliesFromJinjaMarkers) {
  EXPECT_EQ(DetectChatTemplate("{{'<|im_start|>' + role}}"), ChatTemplate::kChatMl);
  EXPECT_EQ(DetectChatTemplate("<|start_header_id|>x<|end_header_id|>"), ChatTemplate::kLlama3);
  EXPECT_EQ(DetectChatTemplate("[INST] <<SYS>>\\n"), ChatTemplate::kLlama2);
  EXPECT_EQ(DetectChatTemplate("{{ '[INST] ' + content + ' [/INST]' }}"), ChatTemplate::kMistral);
  EXPECT_EQ(DetectChatTemplate("<|assistant|>\\n ... <|end|>"), ChatTemplate::kPhi3);
  EXPECT_EQ(DetectChatTemplate("<start_of_turn>user"), ChatTemplate::kGemma);
  EXPECT_EQ(DetectChatTemplate("<|user|>\\n{{ content }}</s>"), ChatTemplate::kZephyr);
  EXPECT_EQ(DetectChatTemplate(""), ChatTemplate::kChatMl);
  EXPECT_EQ(DetectChatTemplate("something unknown"), ChatTemplate::kChatMl);
}

TEST(ChatTemplateTest, ChatMlWithGenerationPrompt) {
  auto r = ApplyChatTemplate(kChat, "", true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, NameOverridesDetection) {
  auto r = ApplyChatTemplate(kChat, "llama3", false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r,
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplateTest, Llama2FoldsSystemIntoFirstTurn) {
  auto r = ApplyChatTemplate({{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", "V"}},
                             ChatTemplate::kLlama2, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A </s><s>[INST] V [/INST]");
}

TEST(ChatTemplateTest, GemmaRenamesAssistantAndFoldsSystem) {
  auto r = ApplyChatTemplate({{"system", "S"}, {"user", "U"}, {"assistant", "A"}},
                             ChatTemplate::kGemma, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r,
            "<start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n"
            "<start_of_turn>model\n");
}

TEST(ChatTemplateTest, Phi3ZephyrMistral) {
  EXPECT_EQ(*ApplyChatTemplate({{"user", "U"}}, ChatTemplate::kPhi3, true),
            "<|user|>\nU<|end|>\n<|assistant|>\n");
  EXPECT_EQ(*ApplyChatTemplate({{"user", "U"}}, ChatTemplate::kZephyr, true),
            "<|user|>\nU<|endoftext|>\n<|assistant|>\n");
  EXPECT_EQ(*ApplyChatTemplate({{"system", "S"}, {"user", "U"}}, ChatTemplate::kMistral, true),
            "[INST] S\n\nU [/INST]");
}

TEST(ChatTemplateTest, RejectsUnknownRoleAndEmptyList) {
  auto bad = ApplyChatTemplate({{"robot", "x"}}, "chatml", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'messages[0].role'"), std::string::npos);
  EXPECT_FALSE(ApplyChatTemplate({}, "chatml", true).ok());
}

TEST(ChatTemplateTest, NamesRoundTrip) {
  ChatTemplate t;
  ASSERT_TRUE(ChatTemplateFromName("qwen", &t));
  EXPECT_EQ(t, ChatTemplate::kChatMl);
  ASSERT_TRUE(ChatTemplateFromName("gemma", &t));
  EXPECT_STREQ(ChatTemplateName(t), "gemma");
  EXPECT_FALSE(ChatTemplateFromName("nope", &t));
}

TEST(RenderChatTemplateTest, ContentRangesCoverExactlyTheMessages) {
  const std::vector<ChatMessage> m = {{"system", ""},
                                      {"user", "hi <|im_end|>"},
                                      {"assistant", "yo"},
                                      {"user",
                                       "\x01"
                                       "0\x02"}};
  auto r = RenderChatTemplate(m, "chatml", ChatOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, *ApplyChatTemplate(m, "chatml", true));
  ASSERT_EQ(r->content.size(), 3u);  // the empty system content has no range
  EXPECT_EQ(r->text.substr(r->content[0].offset, r->content[0].length), "hi <|im_end|>");
  EXPECT_EQ(r->text.substr(r->content[1].offset, r->content[1].length), "yo");
  // Content that looks like a placeholder is content.
  EXPECT_EQ(r->text.substr(r->content[2].offset, r->content[2].length),
            "\x01"
            "0\x02");
  // Templates that test for an empty system prompt see the same emptiness.
  for (const char* t : {"llama2", "gemma", "mistral", "llama3", "phi3", "zephyr"}) {
    auto a = RenderChatTemplate(m, t, ChatOptions{});
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->text, *ApplyChatTemplate(m, t, true)) << t;
  }
}

}  // namespace
}  // namespace sparrow::server
