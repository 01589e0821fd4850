// Ollama's request parsers: the shapes its clients send, Ollama's defaults, and each bad field
// refused with its name (options.top_k, messages[1].tool_calls[0].function.arguments, ...).
#include "api/ollama/ollama_request.h"

#include <gtest/gtest.h>

namespace sparrow::ollama {
namespace {

using json = nlohmann::json;

template <class Parse>
std::string Error(Parse parse, const json& body) {
  std::string param;
  auto r = parse(body, &param);
  return r.ok() ? "ok" : param + ": " + r.status().message();
}

std::string ChatError(const json& body) {
  return Error(ParseChatRequest, body);
}
std::string GenerateError(const json& body) {
  return Error(ParseGenerateRequest, body);
}

TEST(OllamaRequestTest, ChatWithOllamasDefaults) {
  std::string param;
  const json body = {
      {"model", "m:latest"},
      {"messages",
       {{{"role", "system"}, {"content", "be brief"}},
        {{"role", "user"}, {"content", "hi"}},
        {{"role", "assistant"},
         {"content", ""},
         {"thinking", "hmm"},
         {"tool_calls", {{{"function", {{"name", "get"}, {"arguments", {{"city", "Paris"}}}}}}}}},
        {{"role", "tool"}, {"content", "sunny"}, {"tool_name", "get"}}}},
      {"tools",
       {{{"type", "function"},
         {"function", {{"name", "get"}, {"parameters", {{"type", "object"}}}}}}}}};
  auto r = ParseChatRequest(body, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ModelName(r->gen.model), "m");
  EXPECT_TRUE(r->gen.stream);  // Ollama streams by default
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[2].thinking, "hmm");
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, (json{{"city", "Paris"}}));
  EXPECT_EQ(r->messages[3].tool_name, "get");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].name, "get");
  const Options& o = r->gen.options;
  EXPECT_FLOAT_EQ(o.temperature, 0.8f);
  EXPECT_EQ(o.top_k, 40);
  EXPECT_FLOAT_EQ(o.top_p, 0.9f);
  EXPECT_FLOAT_EQ(o.repeat_penalty, 1.1f);
  EXPECT_FALSE(o.seed);
  EXPECT_FALSE(o.num_predict);
  EXPECT_EQ(r->gen.format.kind, Format::Kind::kNone);
  EXPECT_FALSE(r->gen.keep_alive_s);
  EXPECT_FALSE(r->gen.think);
}

TEST(OllamaRequestTest, OptionsFormatKeepAliveAndThink) {
  std::string param;
  const json body = {{"model", "m"},
                     {"prompt", "p"},
                     {"stream", false},
                     {"raw", true},
                     {"format", {{"type", "object"}}},
                     {"keep_alive", "1h30m"},
                     {"think", "high"},
                     {"options",
                      {{"temperature", 0},
                       {"top_k", 5},
                       {"top_p", 0.5},
                       {"min_p", 0.1},
                       {"seed", 42},
                       {"num_predict", 7},
                       {"stop", {"\n", "user:"}},
                       {"repeat_penalty", 1.3},
                       {"repeat_last_n", -1},
                       {"presence_penalty", 0.5},
                       {"frequency_penalty", -0.5},
                       {"num_ctx", 256},
                       {"num_gpu", 99},
                       {"mirostat", 1}}}};
  auto r = ParseGenerateRequest(body, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->gen.stream);
  EXPECT_TRUE(r->raw);
  EXPECT_EQ(r->gen.format.kind, Format::Kind::kSchema);
  EXPECT_EQ(json::parse(r->gen.format.schema), (json{{"type", "object"}}));
  EXPECT_DOUBLE_EQ(*r->gen.keep_alive_s, 5400);
  EXPECT_EQ(r->gen.think, true);
  const Options& o = r->gen.options;
  EXPECT_FLOAT_EQ(o.temperature, 0);
  EXPECT_EQ(o.top_k, 5);
  EXPECT_EQ(*o.seed, 42u);
  EXPECT_EQ(*o.num_predict, 7);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"\n", "user:"}));
  EXPECT_TRUE(o.repeat_last_n_context);
  EXPECT_EQ(*o.num_ctx, 256);
  // -1 means no limit and a random seed, as Ollama reads them; "json" is any JSON object.
  auto unlimited = ParseGenerateRequest(
      json{{"model", "m"}, {"format", "json"}, {"options", {{"num_predict", -1}, {"seed", -1}}}},
      &param);
  ASSERT_TRUE(unlimited.ok());
  EXPECT_FALSE(unlimited->gen.options.num_predict);
  EXPECT_FALSE(unlimited->gen.options.seed);
  EXPECT_EQ(unlimited->gen.format.kind, Format::Kind::kJson);
}

TEST(OllamaRequestTest, GoDurations) {
  double s = 0;
  ASSERT_TRUE(ParseGoDuration("5m", &s));
  EXPECT_DOUBLE_EQ(s, 300);
  ASSERT_TRUE(ParseGoDuration("300", &s));
  EXPECT_DOUBLE_EQ(s, 300);
  ASSERT_TRUE(ParseGoDuration("-1", &s));
  EXPECT_DOUBLE_EQ(s, -1);
  ASSERT_TRUE(ParseGoDuration("0", &s));
  EXPECT_DOUBLE_EQ(s, 0);
  ASSERT_TRUE(ParseGoDuration("1.5h", &s));
  EXPECT_DOUBLE_EQ(s, 5400);
  ASSERT_TRUE(ParseGoDuration("250ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.25);
  for (const char* bad : {"", "m", "5x", "5m3", "1..2s", "0x10s", "five"}) {
    EXPECT_FALSE(ParseGoDuration(bad, &s)) << bad;
  }
}

TEST(OllamaRequestTest, RefusesEachBadFieldByName) {
  const json m = {{"model", "m"}};
  auto with = [&](json extra) {
    json b = m;
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  };
  EXPECT_EQ(ChatError(json{{"messages", json::array()}}), "model: 'model' is required");
  EXPECT_EQ(ChatError(json::array()), "body: 'body' must be a JSON object");
  EXPECT_EQ(ChatError(with({{"stream", "yes"}})), "stream: 'stream' must be true or false");
  EXPECT_EQ(ChatError(with({{"options", 3}})), "options: 'options' must be an object");
  EXPECT_EQ(ChatError(with({{"options", {{"top_k", "many"}}}})),
            "options.top_k: 'options.top_k' must be an integer between 0 and 1048576");
  EXPECT_EQ(ChatError(with({{"options", {{"temperature", "hot"}}}})),
            "options.temperature: 'options.temperature' must be a number between 0 and 100");
  EXPECT_EQ(ChatError(with({{"options", {{"num_predict", 0}}}})),
            "options.num_predict: 'options.num_predict' must be at least 1 (or -1 for no limit)");
  EXPECT_EQ(ChatError(with({{"options", {{"stop", {1}}}}})),
            "options.stop: 'options.stop' must be a string or a list of strings");
  EXPECT_EQ(ChatError(with({{"options", {{"num_ctx", 0}}}})).substr(0, 8), "options.");
  EXPECT_EQ(ChatError(with({{"format", "yaml"}})),
            "format: 'format' must be \"json\" or a JSON schema object; got 'yaml'");
  EXPECT_EQ(ChatError(with({{"format", 1}})),
            "format: 'format' must be \"json\" or a JSON schema object");
  EXPECT_EQ(ChatError(with({{"keep_alive", "soon"}})).substr(0, 12), "keep_alive: ");
  EXPECT_EQ(ChatError(with({{"think", "max"}})).substr(0, 7), "think: ");
  EXPECT_EQ(ChatError(with({{"messages", {{{"role", "robot"}, {"content", "x"}}}}})),
            "messages[0].role: 'messages[0].role' must be one of system, user, assistant, tool; "
            "got 'robot'");
  EXPECT_EQ(ChatError(with({{"messages", {{{"role", "user"}, {"content", 5}}}}})),
            "messages[0].content: 'messages[0].content' must be a string");
  EXPECT_EQ(
      ChatError(with({{"messages", {{{"role", "user"}, {"images", {"aGk="}}}}}})).substr(0, 19),
      "messages[0].images:");
  EXPECT_EQ(ChatError(with(
                {{"messages",
                  {{{"role", "assistant"},
                    {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}}}})),
            "messages[0].tool_calls[0].function.arguments: "
            "'messages[0].tool_calls[0].function.arguments' must be an object");
  EXPECT_EQ(
      ChatError(with({{"messages", {{{"role", "user"}, {"tool_calls", json::array()}}}}})),
      "messages[0].tool_calls: 'messages[0].tool_calls' is only allowed on assistant messages");
  EXPECT_EQ(ChatError(with({{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}))
                .substr(0, 23),
            "tools[0].function.name:");
  EXPECT_EQ(GenerateError(with({{"prompt", 1}})), "prompt: 'prompt' must be a string");
  EXPECT_EQ(GenerateError(with({{"suffix", "end"}})).substr(0, 7), "suffix:");
  EXPECT_EQ(GenerateError(with({{"images", {"aGk="}}})).substr(0, 7), "images:");
  EXPECT_EQ(GenerateError(with({{"template", "{{ .Prompt }}"}})).substr(0, 9), "template:");
  EXPECT_EQ(GenerateError(with({{"context", {1, 2}}})).substr(0, 8), "context:");
  // Empty lists and strings of what sparrowd cannot use are harmless.
  EXPECT_EQ(GenerateError(with({{"images", json::array()}, {"suffix", ""}})), "ok");
}

TEST(OllamaRequestTest, EmbedShapes) {
  std::string param;
  auto one = ParseEmbedRequest(json{{"model", "m"}, {"input", "hi"}, {"truncate", false}}, &param);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->inputs, std::vector<std::string>{"hi"});
  EXPECT_FALSE(one->truncate);
  auto many =
      ParseEmbedRequest(json{{"model", "m"}, {"input", {"a", "b"}}, {"dimensions", 4}}, &param);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->inputs.size(), 2u);
  EXPECT_EQ(*many->dimensions, 4);
  auto legacy = ParseLegacyEmbedRequest(json{{"model", "m"}, {"prompt", "p"}}, &param);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->inputs, std::vector<std::string>{"p"});
  EXPECT_EQ(Error(ParseEmbedRequest, json{{"model", "m"}}), "input: 'input' is required");
  EXPECT_EQ(Error(ParseEmbedRequest, json{{"model", "m"}, {"input", json::array()}}),
            "input: 'input' must be a string or a non-empty list of strings");
  EXPECT_EQ(Error(ParseEmbedRequest, json{{"model", "m"}, {"input", {"a", 2}}}),
            "input[1]: 'input[1]' must be a string");
  EXPECT_EQ(Error(ParseLegacyEmbedRequest, json{{"model", "m"}}),
            "prompt: 'prompt' must be a string");
  EXPECT_EQ(Error(ParseEmbedRequest, json{{"input", "x"}}), "model: 'model' is required");
}

TEST(OllamaRequestTest, ShowTakesModelOrName) {
  std::string param;
  auto by_name = ParseShowRequest(json{{"name", "m"}, {"verbose", true}}, &param);
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->model, "m");
  EXPECT_TRUE(by_name->verbose);
  EXPECT_EQ(Error(ParseShowRequest, json::object()), "model: 'model' is required");
  EXPECT_EQ(ModelName("a:latest"), "a");
  EXPECT_EQ(ModelName("a:q4"), "a:q4");
}

}  // namespace
}  // namespace sparrow::ollama
