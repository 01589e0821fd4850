// The Responses API's request parser (api/openai/openai_responses.h): input items, tools in the
// Responses shape, and the fields it refuses, each naming the field at fault.
#include "api/openai/openai_responses.h"

#include <gtest/gtest.h>

namespace sparrow::openai {
namespace {

using json = nlohmann::json;
using Kind = ResponseItemIn::Kind;

std::string ParamOf(const json& body) {
  std::string param;
  auto r = ParseResponsesRequest(body, &param);
  EXPECT_FALSE(r.ok()) << body.dump();
  return param;
}

TEST(OpenAiResponsesTest, StringInputIsOneUserMessage) {
  std::string param;
  auto r = ParseResponsesRequest(json{{"input", "Hi"}, {"max_output_tokens", 9}, {"store", false}},
                                 &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->input.size(), 1u);
  EXPECT_EQ(r->input[0].kind, Kind::kMessage);
  EXPECT_EQ(r->input[0].role, "user");
  EXPECT_EQ(r->input[0].text, "Hi");
  EXPECT_EQ(r->gen.max_tokens, 9);
  EXPECT_FALSE(r->store);
  // What a stored response keeps of this turn: an item a later request parses again.
  std::vector<ResponseItemIn> again;
  ASSERT_TRUE(ParseResponseItems(r->input_items, "x", &again, &param).ok());
  EXPECT_EQ(again[0].text, "Hi");
}

TEST(OpenAiResponsesTest, ParsesEveryItemKind) {
  const json body = json::parse(R"({"input": [
    {"role": "developer", "content": "Be brief."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                    {"type": "input_text", "text": "b"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "sum"}]},
    {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "full"}]},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},
    {"type": "function_call_output", "call_id": "c1",
     "output": [{"type": "input_text", "text": "42"}]}
  ], "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
     "tool_choice": {"type": "function", "name": "f"}, "reasoning": {"effort": "low"},
     "text": {"format": {"type": "text"}}, "metadata": {"k": "v"}})");
  std::string param;
  auto r = ParseResponsesRequest(body, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->input.size(), 7u);
  EXPECT_EQ(r->input[0].role, "system");
  EXPECT_EQ(r->input[1].text, "ab");
  EXPECT_EQ(r->input[2].text, "sum");   // only a summary: that is the reasoning
  EXPECT_EQ(r->input[3].text, "full");  // its own text when it has one
  EXPECT_EQ(r->input[4].role, "assistant");
  EXPECT_EQ(r->input[4].text, "ok");
  EXPECT_EQ(r->input[5].kind, Kind::kFunctionCall);
  EXPECT_EQ(r->input[5].arguments, "{\"x\": 1}");
  EXPECT_EQ(r->input[6].kind, Kind::kFunctionCallOutput);
  EXPECT_EQ(r->input[6].text, "42");
  EXPECT_EQ(r->tool_choice, "function");
  EXPECT_EQ(r->tool_choice_name, "f");
  EXPECT_EQ(r->reasoning_effort, "low");
  EXPECT_EQ(r->metadata, (json{{"k", "v"}}));
}

TEST(OpenAiResponsesTest, BadFieldsAreNamed) {
  const json user = {{"role", "user"}, {"content", "Hi"}};
  EXPECT_EQ(ParamOf(json::array()), "body");
  EXPECT_EQ(ParamOf(json::object()), "input");
  EXPECT_EQ(ParamOf(json{{"input", 5}}), "input");
  // Only assistant messages carry output_text.
  EXPECT_EQ(ParamOf(json{
                {"input",
                 {{{"role", "user"}, {"content", {{{"type", "output_text"}, {"text", "x"}}}}}}}}),
            "input[0].content[0].type");
  EXPECT_EQ(ParamOf(json{{"input", {{{"role", "user"}, {"content", {{{"type", "input_text"}}}}}}}}),
            "input[0].content[0].text");
  EXPECT_EQ(ParamOf(json{{"input", {user, {{"type", "function_call"}, {"name", "f"}}}}}),
            "input[1].call_id");
  EXPECT_EQ(
      ParamOf(json{
          {"input",
           {{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "[1]"}}}}}),
      "input[0].arguments");
  EXPECT_EQ(ParamOf(json{{"input", {{{"type", "function_call_output"}, {"call_id", "c"}}}}}),
            "input[0].output");
  EXPECT_EQ(ParamOf(json{{"input", {{{"type", 3}}}}}), "input[0].type");
  // The chat shape of a tool ({"function": {...}}) has no name at the top.
  EXPECT_EQ(ParamOf(json{{"input", "x"},
                         {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}}),
            "tools[0].name");
  const json tool = {{"type", "function"}, {"name", "f"}};
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"tools", {tool, tool}}}), "tools[1].name");
  EXPECT_EQ(ParamOf(json{{"input", "x"},
                         {"tools", {{{"type", "function"}, {"name", "f"}, {"parameters", "{}"}}}}}),
            "tools[0].parameters");
  json meta = json::object();
  for (const char* k :
       {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q"}) {
    meta[k] = "v";
  }
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"metadata", meta}}), "metadata");
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"metadata", {{"k", std::string(513, 'v')}}}}),
            "metadata.k");
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"text", {{"format", {{"type", "xml"}}}}}}),
            "text.format.type");
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"reasoning", "high"}}), "reasoning");
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"conversation", "conv_1"}}), "conversation");
}

// text.format constrains the answer as response_format does in chat; the schema sits beside the
// type, and the format is kept as given for the response to echo.
TEST(OpenAiResponsesTest, TextFormatsConstrainTheAnswer) {
  std::string param;
  const json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}};
  const json format = {
      {"type", "json_schema"}, {"name", "n"}, {"schema", schema}, {"strict", true}};
  auto r = ParseResponsesRequest(json{{"input", "x"}, {"text", {{"format", format}}}}, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gen.format.kind, OutputFormatIn::Kind::kJsonSchema);
  EXPECT_EQ(json::parse(r->gen.format.source), schema);
  EXPECT_EQ(r->gen.format.field, "text.format.schema");
  EXPECT_EQ(r->gen.format.pointer, "/text/format/schema");
  EXPECT_EQ(r->text_format, format);

  r = ParseResponsesRequest(json{{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}},
                            &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->gen.format.kind, OutputFormatIn::Kind::kJsonObject);

  r = ParseResponsesRequest(json{{"input", "x"}}, &param);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gen.format.kind, OutputFormatIn::Kind::kText);
  EXPECT_EQ(r->text_format, (json{{"type", "text"}}));

  EXPECT_EQ(ParamOf(json{{"input", "x"},
                         {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}}}}}}),
            "text.format.schema");
  EXPECT_EQ(
      ParamOf(json{
          {"input", "x"},
          {"text", {{"format", {{"type", "json_schema"}, {"name", ""}, {"schema", schema}}}}}}),
      "text.format.name");
  EXPECT_EQ(ParamOf(json{
                {"input", "x"},
                {"text",
                 {{"format", {{"type", "json_schema"}, {"strict", "yes"}, {"schema", schema}}}}}}),
            "text.format.strict");
  EXPECT_EQ(ParamOf(json{{"input", "x"},
                         {"text", {{"format", {{"type", "json_schema"}, {"schema", 5}}}}}}),
            "text.format.schema");
  EXPECT_EQ(ParamOf(json{{"input", "x"}, {"text", {{"format", "json"}}}}), "text.format");
}

}  // namespace
}  // namespace sparrow::openai
