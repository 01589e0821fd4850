// Constrained output over HTTP from a real sparrowd on a random-weight model at temperature 1,
// where only constrained decoding makes an answer parse: every choice that ends with "stop"
// validates against its JSON schema (chat and text completions, n > 1, streaming), GBNF
// grammars and llama-server's json_schema hold, tool calls with tool_choice "required" parse
// with arguments that keep to the tool's schema, and the three refusals are 400s naming what
// is wrong (an unsupported keyword and its JSON pointer, a grammar's line and column, a schema
// nested too deep). One sparrowd serves the whole suite.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;  // request bodies keep the schemas' key order
using testing::SparrowdProcess;

// Checks `doc` against the schema subset these tests use; "" when valid, else why not.
std::string Invalid(const json& doc, const json& schema, const std::string& at = "") {
  if (schema.contains("const") && doc != schema["const"]) return at + ": not the const";
  if (schema.contains("enum")) {
    bool found = false;
    for (const json& v : schema["enum"]) found = found || v == doc;
    if (!found) return at + ": not in the enum";
  }
  const std::string type = schema.value("type", "");
  if (type == "object") {
    if (!doc.is_object()) return at + ": not an object";
    const json props = schema.value("properties", json::object());
    for (const json& r : schema.value("required", json::array())) {
      if (!doc.contains(r.get<std::string>())) return at + ": lacks " + r.get<std::string>();
    }
    for (const auto& [k, v] : doc.items()) {
      if (props.contains(k)) {
        if (std::string e = Invalid(v, props[k], at + "/" + k); !e.empty()) return e;
      } else if (schema.value("additionalProperties", true) == false) {
        return at + ": extra property " + k;
      }
    }
  } else if (type == "array") {
    if (!doc.is_array()) return at + ": not an array";
    if (doc.size() > schema.value("maxItems", size_t{1} << 30)) return at + ": too many items";
    if (doc.size() < schema.value("minItems", size_t{0})) return at + ": too few items";
    if (schema.contains("items")) {
      for (size_t i = 0; i < doc.size(); ++i) {
        if (std::string e = Invalid(doc[i], schema["items"], at + "/" + std::to_string(i));
            !e.empty())
          return e;
      }
    }
  } else if (type == "string") {
    if (!doc.is_string()) return at + ": not a string";
    // Characters, not bytes: count the UTF-8 lead bytes.
    size_t chars = 0;
    for (unsigned char c : doc.get<std::string>()) chars += (c & 0xC0) != 0x80;
    if (chars > schema.value("maxLength", size_t{1} << 30)) return at + ": too long";
    if (chars < schema.value("minLength", size_t{0})) return at + ": too short";
  } else if (type == "integer") {
    if (!doc.is_number_integer()) return at + ": not an integer";
    if (schema.contains("minimum") && doc.get<int64_t>() < schema["minimum"].get<int64_t>())
      return at + ": below the minimum";
    if (schema.contains("maximum") && doc.get<int64_t>() > schema["maximum"].get<int64_t>())
      return at + ": above the maximum";
  } else if (type == "boolean") {
    if (!doc.is_boolean()) return at + ": not a boolean";
  }
  return "";
}

// As a client writes it: the answer's properties come in this order.
constexpr const char* kPersonText = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "kind": {"const": "person"},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    "member": {"type": "boolean"}
  },
  "required": ["name", "age", "kind", "member"],
  "additionalProperties": false
})";
const json kPerson = json::parse(kPersonText);

class SparrowdConstrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SparrowdProcess::Options o;
    o.args = {"--model",         testing::ModelPath("llama-2-tiny-random.gguf"),
              "--port",          "0",
              "--threads",       "1",
              "--grpc-port",     "-1",
              "--chat-template", "chatml"};
    std::string error;
    server_ = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error).release();
    ASSERT_NE(server_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static std::pair<int, json> Post(const std::string& path, const ojson& body) {
    auto [status, text] = testing::PostJsonHttp10(server_->http_port(), path, body.dump());
    return {status, json::parse(text, nullptr, false)};
  }

  static ojson Chat(ojson extra) {
    ojson body = {{"messages", {{{"role", "user"}, {"content", "Describe a person."}}}},
                  {"temperature", 1.0},
                  {"max_tokens", 160},
                  {"seed", 42}};
    body.update(extra);
    return body;
  }

  static SparrowdProcess* server_;
};

SparrowdProcess* SparrowdConstrainTest::server_ = nullptr;

TEST_F(SparrowdConstrainTest, EveryChatAnswerThatStopsValidatesAgainstTheSchema) {
  auto [status, body] = Post(
      "/v1/chat/completions",
      Chat({{"n", 4},
            {"response_format",
             {{"type", "json_schema"},
              {"json_schema",
               {{"name", "person"}, {"schema", ojson::parse(kPersonText)}, {"strict", true}}}}}}));
  ASSERT_EQ(status, 200) << body.dump();
  ASSERT_EQ(body["choices"].size(), 4u);
  int stopped = 0;
  for (const json& c : body["choices"]) {
    if (c["finish_reason"] != "stop") continue;
    ++stopped;
    const std::string text = c["message"]["content"].get<std::string>();
    const json doc = json::parse(text, nullptr, false);
    EXPECT_EQ(Invalid(doc, kPerson), "") << text;
    // Properties come in the schema's order, as the client wrote it.
    EXPECT_LT(text.find("\"name\""), text.find("\"age\"")) << text;
  }
  EXPECT_GT(stopped, 0) << body.dump();
}

TEST_F(SparrowdConstrainTest, TextCompletionsTakeJsonObjectGrammarAndJsonSchema) {
  auto [s1, object] = Post("/v1/completions", {{"prompt", "Data:"},
                                               {"temperature", 1.0},
                                               {"max_tokens", 120},
                                               {"seed", 3},
                                               {"response_format", {{"type", "json_object"}}}});
  ASSERT_EQ(s1, 200) << object.dump();
  const json& c1 = object["choices"][0];
  if (c1["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(c1["text"].get<std::string>(), nullptr, false).is_object())
        << c1.dump();
  }
  auto [s2, gbnf] =
      Post("/v1/completions", {{"prompt", "Date:"},
                               {"temperature", 1.0},
                               {"max_tokens", 40},
                               {"seed", 4},
                               {"grammar", R"(root ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2})"}});
  ASSERT_EQ(s2, 200) << gbnf.dump();
  EXPECT_EQ(gbnf["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(std::regex_match(gbnf["choices"][0]["text"].get<std::string>(),
                               std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}")))
      << gbnf.dump();
  auto [s3, schema] = Post("/v1/completions", {{"prompt", "Person:"},
                                               {"temperature", 1.0},
                                               {"max_tokens", 160},
                                               {"seed", 5},
                                               {"json_schema", ojson::parse(kPersonText)}});
  ASSERT_EQ(s3, 200) << schema.dump();
  const json& c3 = schema["choices"][0];
  if (c3["finish_reason"] == "stop") {
    EXPECT_EQ(Invalid(json::parse(c3["text"].get<std::string>(), nullptr, false), kPerson), "")
        << c3.dump();
  }
}

TEST_F(SparrowdConstrainTest, AStreamedAnswerValidatesToo) {
  const json body =
      Chat({{"stream", true},
            {"response_format",
             {{"type", "json_schema"},
              {"json_schema", {{"name", "person"}, {"schema", ojson::parse(kPersonText)}}}}}});
  auto [status, raw] =
      testing::PostJsonHttp10(server_->http_port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(status, 200) << raw;
  std::string text, finish;
  size_t at = 0;
  while ((at = raw.find("data: ", at)) != std::string::npos) {
    const size_t end = raw.find("\n", at);
    const std::string line = raw.substr(at + 6, end - at - 6);
    at = end;
    if (line.rfind("[DONE]", 0) == 0) break;
    const json chunk = json::parse(line, nullptr, false);
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& c = chunk["choices"][0];
    if (c["delta"].contains("content") && c["delta"]["content"].is_string())
      text += c["delta"]["content"].get<std::string>();
    if (c["finish_reason"].is_string()) finish = c["finish_reason"];
  }
  ASSERT_FALSE(finish.empty()) << raw;
  if (finish == "stop") {
    EXPECT_EQ(Invalid(json::parse(text, nullptr, false), kPerson), "") << text;
  }
}

TEST_F(SparrowdConstrainTest, RequiredToolCallsParseWithArgumentsInTheSchema) {
  const ojson params = ojson::parse(R"({"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 16},
      "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"], "additionalProperties": false})");
  auto [status, body] =
      Post("/v1/chat/completions",
           Chat({{"n", 3},
                 {"max_tokens", 120},
                 {"tool_choice", "required"},
                 {"tools",
                  {{{"type", "function"},
                    {"function",
                     {{"name", "get_weather"}, {"parameters", params}, {"strict", true}}}}}}}));
  ASSERT_EQ(status, 200) << body.dump();
  int called = 0;
  for (const json& c : body["choices"]) {
    if (c["finish_reason"] != "tool_calls") {
      EXPECT_EQ(c["finish_reason"], "length") << c.dump();
      continue;
    }
    ++called;
    ASSERT_FALSE(c["message"]["tool_calls"].empty()) << c.dump();
    for (const json& call : c["message"]["tool_calls"]) {
      EXPECT_EQ(call["function"]["name"], "get_weather");
      const json args =
          json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
      EXPECT_EQ(Invalid(args, json::parse(params.dump())), "") << call.dump();
    }
  }
  EXPECT_GT(called, 0) << body.dump();
}

TEST_F(SparrowdConstrainTest, RefusalsNameWhatIsWrong) {
  auto [s1, unsupported] =
      Post("/v1/chat/completions",
           Chat({{"response_format",
                  {{"type", "json_schema"},
                   {"json_schema",
                    {{"name", "x"},
                     {"schema",
                      {{"type", "object"},
                       {"properties", {{"a", {{"type", "object"}, {"minProperties", 1}}}}}}}}}}}}));
  EXPECT_EQ(s1, 400) << unsupported.dump();
  const std::string m1 = unsupported["error"]["message"].get<std::string>();
  EXPECT_NE(m1.find("minProperties"), std::string::npos) << m1;
  EXPECT_NE(m1.find("/properties/a"), std::string::npos) << m1;
  EXPECT_EQ(unsupported["error"]["param"], "response_format.json_schema.schema");

  auto [s2, malformed] =
      Post("/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= \"a\"\nb ::= [a-\n"}});
  EXPECT_EQ(s2, 400) << malformed.dump();
  const std::string m2 = malformed["error"]["message"].get<std::string>();
  EXPECT_NE(m2.find("line 2"), std::string::npos) << m2;
  EXPECT_NE(m2.find("column"), std::string::npos) << m2;

  ojson deep = {{"type", "string"}};
  for (int i = 0; i < 24; ++i) deep = {{"type", "array"}, {"items", deep}};
  auto [s3, nested] = Post("/v1/completions", {{"prompt", "x"}, {"json_schema", deep}});
  EXPECT_EQ(s3, 400) << nested.dump();
  EXPECT_NE(nested["error"]["message"].get<std::string>().find("deeper than"), std::string::npos)
      << nested.dump();
}

}  // namespace
}  // namespace sparrow
