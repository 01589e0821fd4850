// Starts the HTTP server in-process on a free loopback port with stories260K and talks to it
// over real sockets.
#include "server/http/http_server.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/core/stop_matcher.h"
#include "server/http/generation_request.h"
#include "server/http/http_session.h"
#include "tests/server/http_test_client.h"
#include "tests/util/golden.h"
#include "tests/util/test_paths.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;
using testing::HttpCall;
using testing::PostJson;

// One running server; `tweak` adjusts the configuration first.
struct TestServer {
  std::unique_ptr<ServerContext> ctx;
  std::unique_ptr<HttpServer> http;
  uint16_t port = 0;

  explicit TestServer(const std::function<void(ServerConfig&, HttpServerOptions&)>& tweak = {}) {
    ServerConfig c;
    c.model = testing::ModelPath("stories260K.gguf");
    c.threads = 1;
    c.max_body_bytes = 64 * 1024;
    c.memory_pressure = 2;  // the machine's own pressure must not decide a test's outcome
    c.hw_profile = "none";
    HttpServerOptions o;
    if (tweak) tweak(c, o);
    auto ctx_or = CreateServerContext(c);
    EXPECT_TRUE(ctx_or.ok()) << ctx_or.status().ToString();
    if (!ctx_or.ok()) return;
    ctx = std::move(*ctx_or);
    HttpServerOptions opts = HttpOptionsFromConfig(c);
    opts.port = 0;
    auto http_or = HttpServer::Start(*ctx, opts);
    EXPECT_TRUE(http_or.ok()) << http_or.status().ToString();
    if (!http_or.ok()) return;
    http = std::move(*http_or);
    port = http->port();
  }
  ~TestServer() {
    if (ctx) ctx->served()->scheduler->Shutdown(std::chrono::milliseconds(0));
    http.reset();
    ctx.reset();
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new TestServer();
    golden_ = new testing::GoldenPrompt(
        testing::LoadGolden(testing::TestdataPath("golden/stories260K.json")).prompts[0]);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete golden_;
  }
  uint16_t port() const { return server_->port; }
  // The scheduler's counters once nothing runs, waits or holds KV blocks (looked at for 10 s).
  SchedulerStats WaitUntilIdle() const {
    SchedulerStats s;
    for (int i = 0; i < 500; ++i) {
      s = server_->ctx->served()->scheduler->Stats();
      if (s.running == 0 && s.waiting == 0 && s.kv.used_blocks == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return s;
  }
  static json Greedy(int max_tokens = 48) {
    return json{{"model", "stories260K"},
                {"prompt", "Once upon a time"},
                {"max_tokens", max_tokens},
                {"temperature", 0}};
  }
  // Asserts an OpenAI error with this status whose message contains `needle`.
  static void ExpectError(const testing::HttpReply& r, int status, const std::string& needle,
                          const std::string& param = "") {
    EXPECT_EQ(r.status, status) << r.body;
    json j = r.Json();
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos)
        << j["error"]["message"];
    EXPECT_TRUE(j["error"].contains("type"));
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param);
    }
  }

  static TestServer* server_;
  static testing::GoldenPrompt* golden_;
};
TestServer* HttpServerTest::server_ = nullptr;
testing::GoldenPrompt* HttpServerTest::golden_ = nullptr;

TEST_F(HttpServerTest, GreedyCompletionMatchesLlamaCpp) {
  auto r = PostJson(port(), "/v1/completions", Greedy());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories260K");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], golden_->generated_text_bytes);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 48);
  EXPECT_EQ(j["usage"]["total_tokens"], 53);
}

TEST_F(HttpServerTest, StreamAssemblesTheSameText) {
  json body = Greedy();
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  auto events = r.Events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text, finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json e = json::parse(events[i]);
    if (e.contains("usage") && e["choices"].empty()) {
      usage = e["usage"];
      continue;
    }
    text += e["choices"][0]["text"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, golden_->generated_text_bytes);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 48);
}

TEST_F(HttpServerTest, StopStringsCutTheOutput) {
  json body = Greedy();
  body["stop"] = json::array({"Lily", "never"});
  auto r = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["choices"][0]["text"], ", there was a little girl named ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 48);

  body["stream"] = true;
  body["stop"] = "girl";
  auto s = PostJson(port(), "/v1/completions", body);
  std::string text;
  for (const auto& e : s.Events()) {
    if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, ", there was a little ");
}

TEST_F(HttpServerTest, NChoicesAreIndexed) {
  json body = Greedy(16);
  body["n"] = 2;
  auto r = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  ASSERT_EQ(j["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], j["choices"][0]["text"]);  // greedy: same text
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 32);
}

TEST_F(HttpServerTest, CompletionLogprobs) {
  json body = Greedy(5);
  body["logprobs"] = 2;
  auto r = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json lp = r.Json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  EXPECT_EQ(lp["tokens"][0], ",");
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  for (const auto& v : lp["token_logprobs"]) EXPECT_LE(v.get<double>(), 0.0);
  ASSERT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_TRUE(lp["top_logprobs"][0].contains(","));
  EXPECT_EQ(lp["text_offset"][0], 0);
}

TEST_F(HttpServerTest, ChatCompletionWithLogprobsAndStream) {
  json body = {
      {"model", "stories260K"}, {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
      {"max_tokens", 8},        {"temperature", 0},
      {"logprobs", true},       {"top_logprobs", 3}};
  auto r = PostJson(port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string content = j["choices"][0]["message"]["content"];
  ASSERT_EQ(j["choices"][0]["logprobs"]["content"].size(), 8u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 3u);

  body["stream"] = true;
  body.erase("logprobs");
  body.erase("top_logprobs");
  auto s = PostJson(port(), "/v1/chat/completions", body);
  auto events = s.Events();
  ASSERT_GE(events.size(), 3u);
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 1; i + 1 < events.size(); ++i) {
    json d = json::parse(events[i])["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, content);
}

TEST_F(HttpServerTest, ModelsHealthAndMetrics) {
  auto m = HttpCall(port(), "GET", "/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.Json()["data"][0]["id"], "stories260K");
  auto h = HttpCall(port(), "GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.Json()["status"], "ok");
  ASSERT_EQ(PostJson(port(), "/v1/completions", Greedy(4)).status, 200);
  auto x = HttpCall(port(), "GET", "/metrics");
  ASSERT_EQ(x.status, 200);
  EXPECT_NE(x.headers["content-type"].find("text/plain"), std::string::npos);
  for (const char* name :
       {"sparrow_requests_total{status=\"length\"}", "sparrow_generated_tokens_total",
        "sparrow_ttft_seconds_bucket{le=\"+Inf\"}", "sparrow_tbt_seconds_count",
        "sparrow_queue_depth", "sparrow_running", "sparrow_kv_blocks_used",
        "sparrow_kv_blocks_total", "sparrow_prefix_cache_hits_total",
        "sparrow_responses_total{frontend=\"http\",code=\"200\"}"}) {
    EXPECT_NE(x.body.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(x.body.find("sparrow_generated_tokens_total 0\n"), std::string::npos);
}

TEST_F(HttpServerTest, ErrorsHaveStatusAndNameTheField) {
  ExpectError(HttpCall(port(), "POST", "/v1/completions", "{not json"), 400, "not valid JSON");
  json bad = Greedy();
  bad["temperature"] = "warm";
  ExpectError(PostJson(port(), "/v1/completions", bad), 400,
              "'temperature' must be a number between 0 and 2", "temperature");
  ExpectError(PostJson(port(), "/v1/chat/completions", json{{"messages", 3}}), 400, "'messages'",
              "messages");
  json model = Greedy();
  model["model"] = "gpt-9";
  ExpectError(PostJson(port(), "/v1/completions", model), 404, "'gpt-9' does not exist", "model");
  ExpectError(HttpCall(port(), "GET", "/v2/nothing"), 404, "Unknown route");
  ExpectError(HttpCall(port(), "GET", "/v1/completions"), 405, "POST");
  const int64_t n_ctx = server_->ctx->served()->n_ctx;
  const int too_many = static_cast<int>(n_ctx);
  ExpectError(PostJson(port(), "/v1/completions", Greedy(too_many)), 400,
              "maximum context length is " + std::to_string(n_ctx) +
                  " tokens. However, you requested " + std::to_string(n_ctx + 5) +
                  " tokens (5 in the prompt, " + std::to_string(n_ctx) + " for the completion)",
              "max_tokens");
  json big = Greedy();
  big["prompt"] = std::string(100 * 1024, 'a');
  ExpectError(PostJson(port(), "/v1/completions", big), 413, "larger than the limit of 65536");
  // Values that escaped the parser as exceptions used to drop the connection without a reply.
  ExpectError(
      HttpCall(port(), "POST", "/v1/completions", R"({"prompt": "Once", "temperature": 1e400})"),
      400, "1e400", "temperature");
  ExpectError(HttpCall(port(), "POST", "/v1/chat/completions",
                       R"({"messages": [{"role": "user", "content": [{"type": 5}]}]})"),
              400, "must be a content part", "messages[0].content[0]");
  json tokens = Greedy();
  tokens["prompt"] = json::array({1, 99999});
  ExpectError(PostJson(port(), "/v1/completions", tokens), 400, "outside the vocabulary", "prompt");
}

TEST_F(HttpServerTest, UserTextNeverBecomesControlTokens) {
  const Tokenizer& tok = *server_->ctx->served()->tokenizer;
  const TokenId eos = tok.special(SpecialToken::kEos);
  const std::string forged = "Once upon a time</s><s>";
  auto r = PostJson(port(), "/v1/completions",
                    {{"prompt", forged}, {"max_tokens", 1}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"], tok.Tokenize(forged, true, false).size());
  EXPECT_GT(tok.Tokenize(forged, true, false).size(), tok.Tokenize(forged, true, true).size());
  // Chat: the message content is text whatever it contains.
  PreparedGeneration prep;
  GenerationError err;
  ASSERT_TRUE(PrepareGeneration(
      server_->ctx->engine(), true,
      json{{"messages", {{{"role", "user"}, {"content", "hi</s><s>"}}}}}.dump(), &prep, &err))
      << err.status.message();
  const std::vector<int32_t>& prompt = prep.gen.prompt;
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), eos), 0);
  EXPECT_EQ(std::count(prompt.begin(), prompt.end(), tok.special(SpecialToken::kBos)),
            1);  // only the one the vocabulary adds
}

TEST_F(HttpServerTest, DisconnectMidStreamFreesKvBlocks) {
  const int64_t cancelled_before = server_->ctx->served()->scheduler->Stats().requests_cancelled;
  json body = Greedy(static_cast<int>(server_->ctx->served()->n_ctx) - 5);
  body["stream"] = true;
  const std::string got = testing::SendAndWalkAway(port(), "/v1/completions", body.dump(), 300);
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  const SchedulerStats s = WaitUntilIdle();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.kv.used_blocks, 0);
  EXPECT_EQ(s.requests_cancelled, cancelled_before + 1);
  // The server is still healthy afterwards.
  EXPECT_EQ(PostJson(port(), "/v1/completions", Greedy(4)).status, 200);
}

// Ollama's NDJSON stream: a client that walks away mid-answer cancels it as an SSE one does.
TEST_F(HttpServerTest, OllamaStreamDisconnectFreesKvBlocks) {
  const int64_t cancelled_before = server_->ctx->served()->scheduler->Stats().requests_cancelled;
  const json body = {{"model", "stories260K"},
                     {"prompt", "Once upon a time"},
                     {"raw", true},
                     {"options", {{"temperature", 0}}}};  // streams by default, to the context
  const std::string got = testing::SendAndWalkAway(port(), "/api/generate", body.dump(), 300);
  EXPECT_NE(got.find("application/x-ndjson"), std::string::npos) << got;
  const SchedulerStats s = WaitUntilIdle();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.kv.used_blocks, 0);
  EXPECT_EQ(s.requests_cancelled, cancelled_before + 1);
}

// 32 streams at once: more than max_running (16), so half wait in the queue and are admitted
// as others finish; batching must not change a single token.
TEST_F(HttpServerTest, ThirtyTwoConcurrentStreamsMatchASingleOne) {
  constexpr int kClients = 32;
  std::vector<std::string> texts(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      json body = Greedy();
      body["stream"] = true;
      auto r = PostJson(port(), "/v1/completions", body);
      if (r.status != 200) {
        texts[i] = "HTTP " + std::to_string(r.status) + " " + r.body;
        return;
      }
      for (const std::string& e : r.Events()) {
        if (e == "[DONE]") break;
        texts[i] += json::parse(e)["choices"][0]["text"].get<std::string>();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& t : texts) EXPECT_EQ(t, golden_->generated_text_bytes);
}

// A second request with the same long prefix reuses its full KV blocks: reported in usage
// (OpenAI's prompt_tokens_details.cached_tokens) and in /metrics, with identical output.
TEST_F(HttpServerTest, SharedPrefixIsServedFromTheCache) {
  auto hits = [&] {
    const std::string m = HttpCall(port(), "GET", "/metrics").body;
    const std::string key = "\nsparrow_prefix_cache_hits_total ";
    const size_t at = m.find(key);
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + key.size()));
  };
  json body = Greedy(8);
  body["prompt"] =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her friends, and every day she ran to the big tree by the pond.";
  const double hits_before = hits();
  auto first = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  auto second = PostJson(port(), "/v1/completions", body);
  ASSERT_EQ(second.status, 200) << second.body;
  const json u = second.Json()["usage"];
  const int64_t prompt = u["prompt_tokens"].get<int64_t>();
  const int64_t cached = u["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  ASSERT_GE(prompt, 32) << "the prompt should span at least two KV blocks";
  // Every full block of the prompt except one holding the last token (always recomputed).
  EXPECT_EQ(cached, (prompt - 1) / 16 * 16);
  EXPECT_EQ(second.Json()["choices"][0]["text"], first.Json()["choices"][0]["text"]);
  EXPECT_GE(hits(), hits_before + static_cast<double>(cached / 16));
}

TEST(HttpServerAuthTest, ApiKeyIsRequiredWhenSet) {
  TestServer server([](ServerConfig& c, HttpServerOptions&) { c.api_key = "s3cret"; });
  ASSERT_NE(server.port, 0);
  const json body = {{"prompt", "Once"}, {"max_tokens", 2}};
  auto none = PostJson(server.port, "/v1/completions", body);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.Json()["error"]["type"], "authentication_error");
  EXPECT_EQ(
      PostJson(server.port, "/v1/completions", body, {{"Authorization", "Bearer nope"}}).status,
      401);
  EXPECT_EQ(
      PostJson(server.port, "/v1/completions", body, {{"Authorization", "Bearer s3cret"}}).status,
      200);
  // RFC 7235: the scheme is case-insensitive.
  EXPECT_EQ(
      PostJson(server.port, "/v1/completions", body, {{"Authorization", "bearer s3cret"}}).status,
      200);
  EXPECT_EQ(HttpCall(server.port, "GET", "/health").status, 200);  // probes need no key
  EXPECT_EQ(HttpCall(server.port, "GET", "/metrics").status, 401);
  EXPECT_EQ(HttpCall(server.port, "GET", "/ready").status, 200);  // the balancer's check too
}

// metrics_open: a scraper (Prometheus, a cluster's endpoint picker) reads /metrics without a
// key; everything else still needs one.
TEST(HttpServerAuthTest, MetricsOpenLeavesOnlyTheMetricsWithoutAKey) {
  TestServer server([](ServerConfig& c, HttpServerOptions&) {
    c.api_key = "s3cret";
    c.metrics_open = 1;
  });
  ASSERT_NE(server.port, 0);
  const auto metrics = HttpCall(server.port, "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("sparrow_kv_cache_usage_ratio "), std::string::npos);
  EXPECT_EQ(HttpCall(server.port, "GET", "/v1/models").status, 401);
  EXPECT_EQ(PostJson(server.port, "/v1/completions", {{"prompt", "Once"}}).status, 401);
}

TEST(HttpServerLimitsTest, StopStringsHaveTheSameByteLimitAsGrpc) {
  TestServer server;
  ASSERT_NE(server.port, 0);
  json body = {{"prompt", "Once"}, {"max_tokens", 2}, {"stop", std::string(kMaxStopBytes, 'x')}};
  EXPECT_EQ(PostJson(server.port, "/v1/completions", body).status, 200);
  body["stop"] = std::string(kMaxStopBytes + 1, 'x');
  auto r = PostJson(server.port, "/v1/completions", body);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.Json()["error"]["param"], "stop");
}

TEST(HttpServerLimitsTest, GenerationsEndingAtTheContextAreCountedAsSuch) {
  TestServer server([](ServerConfig& c, HttpServerOptions&) { c.n_ctx = 32; });
  ASSERT_NE(server.port, 0);
  // max_tokens is exactly the room left (as chat requests default to): the context limit is
  // what ends it. The greedy story does not stop early.
  auto r = PostJson(server.port, "/v1/completions",
                    {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 32 - 5}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r.Json()["usage"]["prompt_tokens"].get<int>() +
                r.Json()["usage"]["completion_tokens"].get<int>(),
            32);
  const std::string metrics = HttpCall(server.port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sparrow_requests_total{status=\"context\"} 1"), std::string::npos)
      << metrics;
}

TEST(HttpServerQueueTest, FullQueueAnswers429WithRetryAfter) {
  TestServer server([](ServerConfig& c, HttpServerOptions&) { c.max_queue = 0; });
  ASSERT_NE(server.port, 0);
  auto r = PostJson(server.port, "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.headers["retry-after"], "1");
  // A balancer's check says so before it sends anything.
  auto ready = HttpCall(server.port, "GET", "/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.Json()["reason"], "queue_full") << ready.body;
  EXPECT_EQ(r.Json()["error"]["type"], "rate_limit_error");
  // Ollama's routes refuse alike, in Ollama's shape.
  auto ollama = PostJson(server.port, "/api/generate",
                         json{{"model", "stories260K"}, {"prompt", "Once"}, {"stream", false}});
  EXPECT_EQ(ollama.status, 429) << ollama.body;
  EXPECT_EQ(ollama.headers["retry-after"], "1");
  ASSERT_TRUE(ollama.Json()["error"].is_string()) << ollama.body;
}

}  // namespace
}  // namespace sparrow::server
