#include "api/openai/openai_types.h"

#include <gtest/gtest.h>

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

// Parses a completion body expected to fail; returns "param: message".
std::string CompletionError(const json& body) {
  std::string param;
  auto r = ParseCompletionRequest(body, &param);
  if (r.ok()) return "ok";
  return param + ": " + r.status().message();
}

TEST(OpenAiTypesTest, ParsesACompletionRequest) {
  std::string param;
  auto r = ParseCompletionRequest(json{{"model", "m"},
                                       {"prompt", "Hi"},
                                       {"max_tokens", 7},
                                       {"temperature", 0},
                                       {"top_p", 0.5},
                                       {"seed", 42},
                                       {"stop", {"a", "b"}},
                                       {"n", 2},
                                       {"logprobs", 3},
                                       {"presence_penalty", 0.5},
                                       {"frequency_penalty", -1},
                                       {"user", "u"},
                                       {"stream", true},
                                       {"stream_options", {{"include_usage", true}}}},
                                  &param);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->prompt, "Hi");
  EXPECT_EQ(*r->gen.max_tokens, 7);
  EXPECT_EQ(r->gen.temperature, 0.0f);
  EXPECT_EQ(*r->gen.seed, 42u);
  EXPECT_EQ(r->gen.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r->gen.n, 2);
  EXPECT_TRUE(r->gen.logprobs);
  EXPECT_EQ(r->gen.top_logprobs, 3);
  EXPECT_TRUE(r->gen.stream);
  EXPECT_TRUE(r->gen.include_usage);
  EXPECT_EQ(r->gen.user, "u");
}

TEST(OpenAiTypesTest, PromptAsTokenIdsOrOneStringList) {
  std::string param;
  auto a = ParseCompletionRequest(json{{"prompt", {1, 2, 3}}}, &param);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  auto b = ParseCompletionRequest(json{{"prompt", {"x"}}}, &param);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prompt, "x");
}

TEST(OpenAiTypesTest, ErrorsNameTheField) {
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"temperature", "hot"}}),
            "temperature: 'temperature' must be a number between 0 and 2");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"temperature", 3}}),
            "temperature: 'temperature' must be a number between 0 and 2");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"max_tokens", 0}}).substr(0, 12),
            "max_tokens: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"n", 100}}).substr(0, 3), "n: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"stop", 5}}).substr(0, 6), "stop: ");
  EXPECT_EQ(
      CompletionError(json{{"prompt", "x"}, {"stop", {"a", "b", "c", "d", "e"}}}).substr(0, 6),
      "stop: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"top_p", 0}}).substr(0, 7), "top_p: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"presence_penalty", 5}}).substr(0, 18),
            "presence_penalty: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"stream", "yes"}}).substr(0, 8), "stream: ");
  EXPECT_EQ(CompletionError(json{{"prompt", "x"}, {"seed", 1.5}}).substr(0, 6), "seed: ");
  EXPECT_EQ(CompletionError(json{{"max_tokens", 3}}), "prompt: 'prompt' is required");
  EXPECT_EQ(CompletionError(json{{"prompt", 5}}).substr(0, 8), "prompt: ");
  EXPECT_EQ(CompletionError(json::array()).substr(0, 6), "body: ");
}

TEST(OpenAiTypesTest, ParsesChatMessagesAndLogprobs) {
  std::string param;
  auto r = ParseChatCompletionRequest(
      json{
          {"messages",
           {{{"role", "system"}, {"content", "S"}},
            {{"role", "user"},
             {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}}},
          {"logprobs", true},
          {"top_logprobs", 2},
          {"max_completion_tokens", 9}},
      &param);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[1].content, "ab");
  EXPECT_TRUE(r->gen.logprobs);
  EXPECT_EQ(r->gen.top_logprobs, 2);
  EXPECT_EQ(*r->gen.max_tokens, 9);
}

TEST(OpenAiTypesTest, ChatErrorsNameTheField) {
  std::string param;
  auto a = ParseChatCompletionRequest(json{{"messages", json::array()}}, &param);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(param, "messages");
  auto b =
      ParseChatCompletionRequest(json{{"messages", {{{"role", "bot"}, {"content", "x"}}}}}, &param);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(param, "messages[0].role");
  auto c = ParseChatCompletionRequest(
      json{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 3}}, &param);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(param, "top_logprobs");
}

TEST(OpenAiTypesTest, WrongTypesInsideContentPartsAreErrorsNotExceptions) {
  for (const json& part :
       {json{{"type", 5}}, json{{"type", "text"}, {"text", 7}}, json(3), json{{"text", "x"}}}) {
    std::string param;
    auto r = ParseChatCompletionRequest(
        json{{"messages", {{{"role", "user"}, {"content", json::array({part})}}}}}, &param);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_EQ(param, "messages[0].content[0]") << part;  // the part at fault
  }
}

TEST(OpenAiTypesTest, BodiesThatDoNotParseNameTheLastKey) {
  std::string param;
  auto overflow = ParseRequestBody(R"({"prompt": "x", "temperature": 1e400})", &param);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(param, "temperature");
  EXPECT_NE(overflow.status().message().find("1e400"), std::string::npos)
      << overflow.status().message();
  param.clear();
  auto broken = ParseRequestBody("{not json", &param);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(param, "");
  EXPECT_NE(broken.status().message().find("not valid JSON"), std::string::npos);
  EXPECT_TRUE(ParseRequestBody(R"({"a": [1, 2.5, null]})", &param).ok());
}

TEST(OpenAiTypesTest, ErrorBodyShape) {
  json e = ErrorBody("bad", "invalid_request_error", "temperature");
  EXPECT_EQ(e["error"]["message"], "bad");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["param"], "temperature");
  EXPECT_TRUE(e["error"]["code"].is_null());
}

TEST(OpenAiTypesTest, DumpReplacesInvalidUtf8) {
  EXPECT_EQ(Dump(json("a\xff")), "\"a\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace sparrow::openai
