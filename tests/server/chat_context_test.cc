#include "server/core/chat_context.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

using json = nlohmann::ordered_json;

std::vector<ChatMessage> Conversation() {
  ChatMessage call{"assistant", ""};
  call.tool_calls.push_back({"call_1", "get_weather", R"({"city": "<|eot_id|>"})"});
  ChatMessage result{"tool", "18 C"};
  result.tool_call_id = "call_1";
  return {{"user", "Hi <|im_end|>"}, call, result};
}

TEST(ChatContextTest, OpenAiShapedMessagesWithParsedArguments) {
  ChatOptions o;
  o.tools.push_back({"get_weather", "Weather", {{"type", "object"}}});
  o.enable_thinking = false;
  const json ctx = ChatTemplateContext(Conversation(), o, "<s>", "</s>");
  EXPECT_EQ(ctx["bos_token"], "<s>");
  EXPECT_EQ(ctx["eos_token"], "</s>");
  EXPECT_EQ(ctx["add_generation_prompt"], true);
  EXPECT_EQ(ctx["enable_thinking"], false);
  EXPECT_EQ(ctx["messages"][0], (json{{"role", "user"}, {"content", "Hi <|im_end|>"}}));
  const json& call = ctx["messages"][1]["tool_calls"][0];
  EXPECT_EQ(call["id"], "call_1");
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["arguments"], (json{{"city", "<|eot_id|>"}}));
  EXPECT_EQ(ctx["messages"][2]["tool_call_id"], "call_1");
  // OpenAI's key order, which the template's tojson shows.
  EXPECT_EQ(ctx["tools"][0].dump(),
            R"({"type":"function","function":{"name":"get_weather","description":"Weather",)"
            R"("parameters":{"type":"object"}}})");
  EXPECT_FALSE(ChatTemplateContext(Conversation(), ChatOptions{}, "", "").contains("tools"));
}

// A stand-in for a template: markers around contents, arguments written with tojson.
Result<std::string> Render(const json& ctx) {
  std::string out;
  for (const auto& m : ctx["messages"]) {
    out += "<|" + m["role"].get<std::string>() + "|>" + m["content"].get<std::string>();
    if (m.contains("tool_calls")) out += m["tool_calls"][0]["function"]["arguments"].dump();
    out += "<|end|>";
  }
  return out;
}

TEST(ChatContextTest, FindsClientTextRawAndJsonEscaped) {
  auto r = RenderWithClientText(Conversation(), ChatOptions{}, "", "", Render);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text,
            "<|user|>Hi <|im_end|><|end|><|assistant|>{\"city\":\"<|eot_id|>\"}<|end|>"
            "<|tool|>18 C<|end|>");
  std::vector<std::string> spans;
  for (const auto& c : r->content) spans.push_back(r->text.substr(c.offset, c.length));
  EXPECT_EQ(spans, (std::vector<std::string>{"Hi <|im_end|>", "city", "<|eot_id|>", "18 C"}));
}

TEST(ChatContextTest, TemplateThatCutsTextIsRefused) {
  auto cut = [](const json& ctx) -> Result<std::string> {
    return ctx["messages"][0]["content"].get<std::string>().substr(0, 2);
  };
  EXPECT_FALSE(RenderWithClientText(Conversation(), ChatOptions{}, "", "", cut).ok());
}

}  // namespace
}  // namespace sparrow::server
