// Real models' Jinja templates (tests/data/chat_templates) run by the interpreter, with tools,
// tool calls and thinking, and the fallback to the built-in families.
#include "server/chat/chat_renderer.h"

#include <gtest/gtest.h>

#include "tests/server/chat/template_file.h"

namespace sparrow::server {
namespace {

ChatOptions WeatherTool() {
  ChatOptions o;
  o.tools.emplace_back("get_weather", "Weather <|im_end|> of a city",
                       nlohmann::json{{"type", "object"}});
  return o;
}

std::vector<ChatMessage> Conversation() {
  ChatMessage call("assistant", "");
  call.tool_calls.push_back({"call_1", "get_weather", R"({"city": "Paris"})"});
  ChatMessage result("tool", "18 C <|im_start|>");
  result.tool_call_id = "call_1";
  return {{"user", "Weather in Paris?"}, call, result};
}

// Every occurrence of `needle` lies inside a client text range.
bool AllCovered(const RenderedChat& r, const std::string& needle) {
  for (size_t at = r.text.find(needle); at != std::string::npos; at = r.text.find(needle, at + 1)) {
    bool covered = false;
    for (const auto& c : r.content) {
      covered |= c.offset <= at && at + needle.size() <= c.offset + c.length;
    }
    if (!covered) return false;
  }
  return true;
}

TEST(ChatRendererTest, QwenTemplateWritesToolsAndKeepsClientTextApart) {
  ChatRenderer r(ReadChatTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"), "", "<|im_end|>");
  ASSERT_TRUE(r.has_jinja());
  auto out = r.Render(Conversation(), WeatherTool());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(out->text.find("<tools>\n{\"type\": \"function\""), std::string::npos) << out->text;
  EXPECT_NE(out->text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                           "\"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << out->text;
  EXPECT_NE(out->text.find("<tool_response>\n18 C <|im_start|>\n</tool_response>"),
            std::string::npos);
  EXPECT_TRUE(out->text.ends_with("<|im_start|>assistant\n"));
  EXPECT_TRUE(AllCovered(*out, "Weather <|im_end|> of a city"));
  EXPECT_TRUE(AllCovered(*out, "18 C <|im_start|>"));
  EXPECT_TRUE(AllCovered(*out, "Paris"));
}

TEST(ChatRendererTest, Llama31TemplateDropsItsBos) {
  ChatRenderer r(ReadChatTemplate("meta-llama-Llama-3.1-8B-Instruct.jinja"), "<|begin_of_text|>",
                 "<|eot_id|>");
  auto out = r.Render(Conversation(), WeatherTool());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // The tokenizer adds BOS; the template's own is dropped.
  EXPECT_TRUE(out->text.starts_with("<|start_header_id|>system")) << out->text.substr(0, 80);
  EXPECT_NE(out->text.find("<|start_header_id|>ipython<|end_header_id|>"), std::string::npos);
  EXPECT_TRUE(AllCovered(*out, "18 C <|im_start|>"));
  // A tokenizer that adds no BOS keeps the template's.
  ChatRenderer keeps(ReadChatTemplate("meta-llama-Llama-3.1-8B-Instruct.jinja"),
                     "<|begin_of_text|>", "<|eot_id|>", /*tokenizer_adds_bos=*/false);
  out = keeps.Render(Conversation(), WeatherTool());
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->text.starts_with("<|begin_of_text|><|start_header_id|>system"));
}

TEST(ChatRendererTest, ThinkingSwitchAndOpenedThought) {
  ChatRenderer qwen3(ReadChatTemplate("Qwen-Qwen3-0.6B.jinja"), "", "<|im_end|>");
  ChatOptions o;
  o.enable_thinking = false;
  auto out = qwen3.Render({{"user", "Hi"}}, o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->text.ends_with("<think>\n\n</think>\n\n")) << out->text;
  EXPECT_FALSE(out->opens_thinking);

  ChatRenderer r1(ReadChatTemplate("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
                  "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>");
  o.enable_thinking = true;
  out = r1.Render({{"user", "Hi"}}, o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->opens_thinking) << out->text;
}

TEST(ChatRendererTest, TemplateRefusalsReachTheClient) {
  // Mistral's template insists that roles alternate.
  ChatRenderer r(ReadChatTemplate("mistralai-Mistral-Nemo-Instruct-2407.jinja"), "<s>", "</s>");
  auto out = r.Render({{"user", "a"}, {"user", "b"}}, ChatOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("raise_exception"), std::string::npos);
}

TEST(ChatRendererTest, FallsBackToTheFamily) {
  // A family name, no template, a template that cannot be parsed, one that never mentions tools.
  for (const std::string& setting :
       {std::string("chatml"), std::string(""), std::string("<|im_start|>{% bogus %}"),
        std::string("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}")}) {
    ChatRenderer r(setting, "", "");
    auto out = r.Render(Conversation(), WeatherTool());
    ASSERT_TRUE(out.ok()) << setting;
    EXPECT_NE(out->text.find("<|im_start|>system\n# Tools"), std::string::npos) << setting;
  }
}

}  // namespace
}  // namespace sparrow::server
