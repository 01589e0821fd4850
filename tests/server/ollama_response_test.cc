// Ollama's answer objects: created_at as RFC 3339 in UTC with nanoseconds, a chat piece's message
// (thinking, tool calls with object arguments and their index), a generate piece's response, the
// done object's reason and durations, the error body, and parameter sizes as Ollama writes them.
#include "server/http/ollama_response.h"

#include <gtest/gtest.h>

#include "server/http/ollama_models.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

TEST(OllamaResponseTest, TimeIsRfc3339InUtcWithNanoseconds) {
  const std::chrono::system_clock::time_point t =
      std::chrono::system_clock::time_point(std::chrono::seconds(1721680408)) +
      std::chrono::microseconds(123648);
  EXPECT_EQ(OllamaTime(t), "2024-07-22T20:33:28.123648000Z");
}

TEST(OllamaResponseTest, ChatPieceCarriesThinkingAndObjectArguments) {
  ChatDelta d;
  d.content = "Hi";
  d.reasoning = "hmm";
  d.tool_calls.push_back({"call_1", "get_weather", R"({"city": "Paris"})"});
  d.first_call_index = 2;
  const json j = OllamaChunk(/*chat=*/true, "m", d);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["done"], false);
  EXPECT_EQ(j["message"]["role"], "assistant");
  EXPECT_EQ(j["message"]["content"], "Hi");
  EXPECT_EQ(j["message"]["thinking"], "hmm");
  const json& call = j["message"]["tool_calls"][0]["function"];
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["index"], 2);
  EXPECT_EQ(call["arguments"], (json{{"city", "Paris"}}));
  EXPECT_FALSE(j.contains("response"));
}

TEST(OllamaResponseTest, GenerateDoneHasTheReasonAndDurations) {
  ChatDelta d;
  d.content = "story";
  OllamaTimings t;
  t.total_ns = 9;
  t.load_ns = 1;
  t.prompt_eval_count = 3;
  t.prompt_eval_ns = 2;
  t.eval_count = 4;
  t.eval_ns = 5;
  const json j = OllamaDone(/*chat=*/false, "m", d, "length", &t);
  EXPECT_EQ(j["response"], "story");
  EXPECT_EQ(j["done"], true);
  EXPECT_EQ(j["done_reason"], "length");
  EXPECT_EQ(j["total_duration"], 9);
  EXPECT_EQ(j["load_duration"], 1);
  EXPECT_EQ(j["prompt_eval_count"], 3);
  EXPECT_EQ(j["prompt_eval_duration"], 2);
  EXPECT_EQ(j["eval_count"], 4);
  EXPECT_EQ(j["eval_duration"], 5);
  EXPECT_FALSE(j.contains("message"));
  // A load or unload answer has no counts.
  EXPECT_FALSE(OllamaDone(true, "m", {}, "load", nullptr).contains("eval_count"));
}

TEST(OllamaResponseTest, ErrorsAreOllamasShape) {
  HttpRequest req(http::verb::post, "/api/chat", 11);
  GenerationError err{Unavailable("switching"), "model", ""};
  const HttpResponse res = OllamaRefusal(req, err);
  EXPECT_EQ(res.result(), http::status::service_unavailable);
  EXPECT_EQ(res[http::field::retry_after], "1");
  EXPECT_EQ(json::parse(res.body()), (json{{"error", "switching"}}));
  EXPECT_EQ(OllamaRefusal(req, {NotFound("model 'x' not found"), "model", ""}).result(),
            http::status::not_found);
}

TEST(OllamaResponseTest, ParameterSizes) {
  EXPECT_EQ(ParameterSize(292800), "293K");
  EXPECT_EQ(ParameterSize(1'100'048'384), "1.1B");
  EXPECT_EQ(ParameterSize(7'241'732'096), "7.2B");
  EXPECT_EQ(ParameterSize(15'000'000), "15M");
  EXPECT_EQ(ParameterSize(8'000'000'000), "8B");
  EXPECT_EQ(ParameterSize(12), "12");
}

}  // namespace
}  // namespace sparrow::server
