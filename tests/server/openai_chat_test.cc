// Tools, tool messages, reasoning fields and logit_bias in OpenAI chat requests.
#include <gtest/gtest.h>

#include "api/openai/openai_types.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

json Base() {
  return json::parse(R"({
    "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "reasoning_content": "Need a tool.",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "3 C"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "parallel_tool_calls": false,
    "reasoning_format": "none",
    "chat_template_kwargs": {"enable_thinking": false},
    "logit_bias": {"42": -100, "7": 5.5}
  })");
}

TEST(OpenAiChatTest, ParsesToolsMessagesAndControls) {
  std::string param;
  auto r = ParseChatCompletionRequest(Base(), &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_EQ(r->messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r->messages[1].tool_calls[0].arguments, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(r->messages[1].reasoning_content, "Need a tool.");
  EXPECT_EQ(r->messages[2].tool_call_id, "call_1");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].parameters, (json{{"type", "object"}}));
  EXPECT_EQ(r->tool_choice, "function");
  EXPECT_EQ(r->tool_choice_name, "get_weather");
  EXPECT_FALSE(r->parallel_tool_calls);
  EXPECT_EQ(r->reasoning_format, "none");
  EXPECT_EQ(r->enable_thinking, false);
  ASSERT_EQ(r->gen.logit_bias.size(), 2u);
}

TEST(OpenAiChatTest, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(/tools/0/function/name)", "tools[0].function.name"},
      {R"(/tools/0/type)", "tools[0].type"},
      {R"(/messages/1/tool_calls/0/function/arguments)",
       "messages[1].tool_calls[0].function.arguments"},
      {R"(/messages/1/tool_calls/0/id)", "messages[1].tool_calls[0].id"},
      {R"(/messages/2/tool_call_id)", "messages[2].tool_call_id"},
      {R"(/messages/1/reasoning_content)", "messages[1].reasoning_content"},
      {R"(/tool_choice)", "tool_choice"},
      {R"(/parallel_tool_calls)", "parallel_tool_calls"},
      {R"(/reasoning_format)", "reasoning_format"},
      {R"(/chat_template_kwargs/enable_thinking)", "chat_template_kwargs.enable_thinking"},
      {R"(/logit_bias/42)", "logit_bias"},
  };
  for (const auto& [pointer, field] : cases) {
    json body = Base();
    body[json::json_pointer(pointer)] = 12345;  // the wrong type or value everywhere
    std::string param;
    auto r = ParseChatCompletionRequest(body, &param);
    ASSERT_FALSE(r.ok()) << pointer;
    EXPECT_EQ(param, field) << r.status().ToString();
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().ToString();
  }
}

TEST(OpenAiChatTest, ToolResultMustAnswerAnEarlierCall) {
  json body = Base();
  body["messages"][2]["tool_call_id"] = "call_9";
  std::string param;
  EXPECT_FALSE(ParseChatCompletionRequest(body, &param).ok());
  EXPECT_EQ(param, "messages[2].tool_call_id");
  body = Base();
  body["tools"].push_back(body["tools"][0]);  // the same name twice
  EXPECT_FALSE(ParseChatCompletionRequest(body, &param).ok());
  EXPECT_EQ(param, "tools[1].function.name");
  body = Base();
  body["messages"][0]["tool_calls"] = body["messages"][1]["tool_calls"];
  EXPECT_FALSE(ParseChatCompletionRequest(body, &param).ok());
  EXPECT_EQ(param, "messages[0].tool_calls");
}

}  // namespace
}  // namespace sparrow::openai
