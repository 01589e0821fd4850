#include "api/openai/json_limits.h"

#include <gtest/gtest.h>

#include "api/openai/openai_types.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

std::string Nested(int levels, char open = '[', char close = ']') {
  return std::string(static_cast<size_t>(levels), open) +
         std::string(static_cast<size_t>(levels), close);
}

TEST(JsonLimitsTest, DepthUpToTheLimitParses) {
  auto at_limit = ParseBoundedJson(Nested(kMaxJsonDepth), "x");
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  auto over = ParseBoundedJson(Nested(kMaxJsonDepth + 1), "x");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("deeper than 64 levels"), std::string::npos)
      << over.status().message();
}

// 150,000 levels in a tool's parameters: the body that crashed sparrowd (its copies and walks
// recursed once per level). Refused at the parse, naming the field and where inside it.
TEST(JsonLimitsTest, DeepToolParametersAreRefusedNamingTheField) {
  std::string deep;
  for (int i = 0; i < 150000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(150000, '}');
  const std::string body =
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": )" +
      deep + "}}]}";
  std::string param;
  auto r = ParseRequestBody(body, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "tools");
  EXPECT_NE(r.status().message().find("at 'tools[0].function.parameters.a.a.a.a...'"),
            std::string::npos)
      << r.status().message();
}

TEST(JsonLimitsTest, PathNamesArrayIndicesAndKeys) {
  // The third element of "b" opens the 65th level.
  const std::string body = R"({"a": 1, "b": [0, {"c": 2}, )" + Nested(63, '[', ']') + "]}";
  std::string param;
  auto r = ParseRequestBody(body, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "b");
  EXPECT_NE(r.status().message().find("at 'b[2][0][0][0][0][0][0]...'"), std::string::npos)
      << r.status().message();
  // One level less fits.
  EXPECT_TRUE(ParseRequestBody(R"({"b": [0, {"c": 2}, )" + Nested(62) + "]}", nullptr).ok());
}

TEST(JsonLimitsTest, SyntaxErrorsStillNameTheLastKey) {
  std::string param;
  auto r = ParseRequestBody(R"({"model": "m", "temperature": tru})", &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "temperature");
  EXPECT_NE(r.status().message().find("the request body is not valid JSON"), std::string::npos);
  auto field = ParseBoundedJson("{", "tools[1].parameters_json");
  ASSERT_FALSE(field.ok());
  EXPECT_NE(field.status().message().find("'tools[1].parameters_json' is not valid JSON"),
            std::string::npos)
      << field.status().message();
}

TEST(JsonLimitsTest, DeepToolCallArgumentsAreRefused) {
  const json body = {
      {"messages",
       {{{"role", "user"}, {"content", "hi"}},
        {{"role", "assistant"},
         {"tool_calls",
          {{{"id", "c1"},
            {"type", "function"},
            {"function", {{"name", "f"}, {"arguments", "{\"x\":" + Nested(100) + "}"}}}}}}}}}};
  std::string param;
  auto r = ParseChatCompletionRequest(body, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "messages[1].tool_calls[0].function.arguments");
  EXPECT_NE(r.status().message().find("deeper than 64"), std::string::npos) << r.status().message();
}

TEST(JsonLimitsTest, OrderedJsonAndScalars) {
  auto r = ParseBoundedJson<nlohmann::ordered_json>(R"({"z": 1, "a": [true, null, "s"]})", "x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->begin().key(), "z");
  EXPECT_TRUE(ParseBoundedJson("42", "x").ok());
  EXPECT_FALSE(ParseBoundedJson<nlohmann::ordered_json>(Nested(65, '[', ']'), "x").ok());
}

}  // namespace
}  // namespace sparrow::openai
