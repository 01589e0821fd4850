// --context-shift against the real sparrowd (a 128-position context): a chat whose answer runs
// past the context keeps its system prompt, drops the oldest half of the rest and goes on to
// max_tokens, finishing with "length" and the tokens it really made; a prompt longer than the
// context is cut as llama-server cuts it. Without the flag the same request is refused (400).
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

constexpr int64_t kCtx = 128;

std::unique_ptr<SparrowdProcess> Start(bool shift) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--grpc-port", "-1",
            "--threads",   "1",
            "--n-ctx",     std::to_string(kCtx)};
  if (shift) o.args.push_back("--context-shift");
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

const json kChat = {
    {"messages",
     {{{"role", "system"}, {"content", "You tell short stories about a cat named Tom."}},
      {{"role", "user"}, {"content", "Once upon a time"}}}},
    {"max_tokens", 300},
    {"temperature", 0},
    {"logit_bias", {{"2", -100}}}};  // no end of story (EOS): the answer runs to max_tokens

TEST(ContextShiftTest, AChatRunsPastTheContextAndKeepsItsSystemPrompt) {
  auto p = Start(true);
  ASSERT_NE(p, nullptr);
  const auto [status, body] =
      testing::PostJsonHttp10(p->http_port(), "/v1/chat/completions", kChat.dump());
  ASSERT_EQ(status, 200) << body;
  const json r = json::parse(body);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 300);
  const int64_t prompt = r["usage"]["prompt_tokens"].get<int64_t>();
  ASSERT_LT(prompt, kCtx);
  // 300 tokens in a 128-position context: shifted at least twice, the system prompt (more than
  // the BOS, less than the whole prompt) kept each time.
  std::smatch m;
  const std::string log = p->Stdout();
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex(R"(context shift: a request of (\d+) prompt tokens \(keeping (\d+)\) )"
                 R"(shifted (\d+) times over 300 tokens)")))
      << log;
  EXPECT_EQ(std::stoll(m[1]), prompt);
  EXPECT_GT(std::stoll(m[2]), 1);
  EXPECT_LT(std::stoll(m[2]), prompt);
  EXPECT_GE(std::stoll(m[3]), 2);

  // A text prompt longer than the context is cut to fit, and answered.
  std::string text;
  for (int i = 0; i < 20; ++i) text += "Tom the cat ran to the park. ";
  const json long_prompt = {{"prompt", text}, {"max_tokens", 8}, {"temperature", 0}};
  const auto [status2, body2] =
      testing::PostJsonHttp10(p->http_port(), "/v1/completions", long_prompt.dump());
  ASSERT_EQ(status2, 200) << body2;
  const json r2 = json::parse(body2);
  EXPECT_LT(r2["usage"]["prompt_tokens"].get<int64_t>(), kCtx);
  EXPECT_EQ(r2["usage"]["completion_tokens"], 8);
  EXPECT_EQ(r2["choices"][0]["finish_reason"], "length");
}

TEST(ContextShiftTest, OffTheAnswerMayNotOutgrowTheContext) {
  auto p = Start(false);
  ASSERT_NE(p, nullptr);
  const auto [status, body] =
      testing::PostJsonHttp10(p->http_port(), "/v1/chat/completions", kChat.dump());
  EXPECT_EQ(status, 400) << body;
  EXPECT_NE(body.find("context_length_exceeded"), std::string::npos) << body;
  EXPECT_EQ(p->Stdout().find("context shift:"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
