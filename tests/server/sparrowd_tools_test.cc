// Tool calls over HTTP from a real sparrowd, in each template family's format. The tiny model
// never calls a tool itself: the server allows forced answers (--allow-forced-output) and each
// request's forced_output is what the model says, through the real engine and parsers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

std::unique_ptr<SparrowdProcess> StartSparrowd(std::vector<std::string> extra) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--threads",   "1",
            "--grpc-port", "-1"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

// POST over HTTP/1.0 (the body is what follows the head); the status and the JSON body.
std::pair<int, json> Chat(const SparrowdProcess& s, json body) {
  const std::string b = body.dump();
  const std::string raw = testing::RawExchange(
      "127.0.0.1", s.http_port(),
      "POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(b.size()) + "\r\n\r\n" + b);
  const size_t head = raw.find("\r\n\r\n");
  json j =
      json::parse(raw.substr(head == std::string::npos ? raw.size() : head + 4), nullptr, false);
  return {testing::StatusOf(raw), j};
}

json Request(const std::string& forced) {
  return {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
          {"tools",
           {{{"type", "function"},
             {"function",
              {{"name", "get_weather"},
               {"parameters", {{"type", "object"}, {"properties", json::object()}}}}}}}},
          {"temperature", 0},
          {"max_tokens", 200},
          {"forced_output", forced}};
}

struct FamilyCase {
  const char* family;
  const char* output;  // what the model is made to say
  int calls;
};

class SparrowdToolsTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(SparrowdToolsTest, ParsesTheFamilysToolCalls) {
  const FamilyCase& c = GetParam();
  auto s = StartSparrowd({"--chat-template", c.family, "--allow-forced-output"});
  ASSERT_NE(s, nullptr);
  auto [status, body] = Chat(*s, Request(c.output));
  ASSERT_EQ(status, 200) << body.dump();
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << body.dump();
  ASSERT_EQ(choice["message"]["tool_calls"].size(), static_cast<size_t>(c.calls)) << body.dump();
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
            (json{{"city", "Paris"}}));
  EXPECT_TRUE(choice["message"]["content"].is_null());
}

INSTANTIATE_TEST_SUITE_P(
    Families, SparrowdToolsTest,
    ::testing::Values(
        FamilyCase{"chatml",
                   "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                   "\"Paris\"}}\n</tool_call>",
                   1},
        FamilyCase{"llama3",
                   "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": "
                   "\"Paris\"}}",
                   1},
        FamilyCase{"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                   1},
        FamilyCase{"mistral",
                   "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                   "\"Paris\"}}, {\"name\": \"get_weather\", \"arguments\": {}}]",
                   2},
        FamilyCase{"mistral", "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", 1}),
    [](const auto& info) {
      return std::string(info.param.family) + "_" + std::to_string(info.index);
    });

// The model's own Jinja template (here Qwen 3's, given as chat_template_file since the test
// models carry none): tools in its prompt, its calls and its thinking parsed.
TEST(SparrowdJinjaTest, Qwen3TemplateToolsAndThinking) {
  auto s = StartSparrowd(
      {"--chat-template-file",
       std::string(SPARROW_SOURCE_DIR) + "/tests/data/chat_templates/Qwen-Qwen3-0.6B.jinja",
       "--allow-forced-output"});
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->Stdout().find("chat template Jinja"), std::string::npos) << s->Stdout();
  auto [status, body] = Chat(*s, Request("<think>\nParis, so a call.\n</think>\n\n<tool_call>\n"
                                         "{\"name\": \"get_weather\", \"arguments\": "
                                         "{\"city\": \"Paris\"}}\n</tool_call>"));
  ASSERT_EQ(status, 200) << body.dump();
  const json& message = body["choices"][0]["message"];
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(message["reasoning_content"], "Paris, so a call.");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  // The tools reached the prompt: it is longer than the same chat without them.
  json no_tools = Request("ok");
  no_tools.erase("tools");
  auto [status2, plain] = Chat(*s, no_tools);
  ASSERT_EQ(status2, 200);
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int>(),
            plain["usage"]["prompt_tokens"].get<int>() + 50);
}

// Other models' own templates: the call format comes from the template's text.
TEST(SparrowdJinjaTest, Llama31AndMistralNemoTemplates) {
  const std::pair<const char*, const char*> cases[] = {
      {"meta-llama-Llama-3.1-8B-Instruct.jinja",
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
  };
  for (const auto& [file, output] : cases) {
    auto s = StartSparrowd({"--chat-template-file",
                            std::string(SPARROW_SOURCE_DIR) + "/tests/data/chat_templates/" + file,
                            "--allow-forced-output"});
    ASSERT_NE(s, nullptr);
    auto [status, body] = Chat(*s, Request(output));
    ASSERT_EQ(status, 200) << file << ": " << body.dump();
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls") << file << ": " << body.dump();
    const json& calls = body["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << file;
    EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()),
              (json{{"city", "Paris"}}));
    EXPECT_EQ(s->Stdout().find("using the built-in"), std::string::npos) << s->Stdout();
  }
}

// DeepSeek R1's template opens <think> in the generation prompt: the answer starts inside the
// thought, with no <think> of its own.
TEST(SparrowdJinjaTest, TemplateThatOpensTheThought) {
  auto s = StartSparrowd({"--chat-template-file",
                          std::string(SPARROW_SOURCE_DIR) +
                              "/tests/data/chat_templates/"
                              "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
                          "--allow-forced-output"});
  ASSERT_NE(s, nullptr);
  json request = Request("I think so.\n</think>\n\nYes.");
  request.erase("tools");
  request["chat_template_kwargs"] = {{"enable_thinking", true}};
  auto [status, body] = Chat(*s, request);
  ASSERT_EQ(status, 200) << body.dump();
  const json& message = body["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "I think so.") << body.dump();
  EXPECT_EQ(message["content"], "Yes.");
}

TEST(SparrowdForcedOutputTest, RefusedUnlessTheServerAllowsIt) {
  auto s = StartSparrowd({});
  ASSERT_NE(s, nullptr);
  auto [status, body] = Chat(*s, Request("hello"));
  EXPECT_EQ(status, 400);
  EXPECT_EQ(body["error"]["param"], "forced_output") << body.dump();
  // The request works without it: the tools reach the template and the model answers.
  json plain = Request("");
  plain.erase("forced_output");
  plain["max_tokens"] = 8;
  auto [ok, answer] = Chat(*s, plain);
  EXPECT_EQ(ok, 200) << answer.dump();
}

}  // namespace
}  // namespace sparrow
