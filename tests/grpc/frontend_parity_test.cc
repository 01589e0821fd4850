// The same requests through HTTP and gRPC, served from one context: both frontends prepare a
// generation in one place (server/core/generation_spec.h), so they accept, default and refuse
// alike. (Before, gRPC took max_tokens beyond the context and defaulted to 128 regardless.)
#include <gtest/gtest.h>

#include <functional>

#include "server/core/stop_matcher.h"
#include "server/http/http_server.h"
#include "tests/grpc/test_server.h"
#include "tests/server/http_test_client.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;

struct Outcome {
  bool ok = false;
  std::string error;  // the message when refused
  std::string text;
  int64_t completion_tokens = 0;
};

struct Case {
  std::string name;
  json http;  // body of POST /v1/completions
  std::function<void(v1::GenerateRequest*)> grpc;
  bool ok;
  std::string needle;  // in the error message when refused
  int http_status;
  grpc::StatusCode grpc_code;
};

class FrontendParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config = testing::TestServer::DefaultConfig();
    config.n_ctx = 64;
    grpc_ = testing::TestServer::Start(config);
    ASSERT_NE(grpc_, nullptr);
    HttpServerOptions o = HttpOptionsFromConfig(grpc_->ctx().config);
    o.port = 0;
    auto http = HttpServer::Start(grpc_->ctx(), o);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(*http);
  }
  void TearDown() override {
    if (http_) http_->Stop();
  }

  Outcome ViaHttp(const Case& c, int* status) {
    auto r = testing::PostJson(http_->port(), "/v1/completions", c.http);
    *status = r.status;
    Outcome o;
    const json j = r.Json();
    o.ok = r.status == 200;
    if (!o.ok) {
      o.error = j["error"]["message"];
      return o;
    }
    o.text = j["choices"][0]["text"];
    o.completion_tokens = j["usage"]["completion_tokens"];
    return o;
  }

  Outcome ViaGrpc(const Case& c, grpc::StatusCode* code) {
    v1::GenerateRequest req;
    c.grpc(&req);
    grpc::ClientContext ctx;
    auto reader = grpc_->stub().Generate(&ctx, req);
    Outcome o;
    v1::GenerateResponse m;
    while (reader->Read(&m)) {
      o.text += m.text();
      if (m.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
        o.completion_tokens = m.usage().completion_tokens();
      }
    }
    const grpc::Status s = reader->Finish();
    *code = s.error_code();
    o.ok = s.ok();
    o.error = s.error_message();
    return o;
  }

  std::unique_ptr<testing::TestServer> grpc_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(FrontendParityTest, SameRequestsSameAnswers) {
  const std::vector<int32_t> sixty(60, 403);  // leaves 4 positions of the 64
  const std::vector<Case> cases = {
      {"greedy",
       {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once upon a time");
         r->mutable_options()->set_max_tokens(8);
         r->mutable_options()->mutable_sampling()->set_temperature(0);
       },
       true,
       "",
       200,
       grpc::StatusCode::OK},
      {"max_tokens beyond the context",
       {{"prompt", "Once upon a time"}, {"max_tokens", 60}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once upon a time");
         r->mutable_options()->set_max_tokens(60);
       },
       false,
       "maximum context length is 64",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"unset max_tokens is cut to the room left",
       {{"prompt", sixty}, {"temperature", 0}},
       [&](v1::GenerateRequest* r) {
         for (int32_t t : sixty) r->add_prompt_tokens(t);
         r->mutable_options()->mutable_sampling()->set_temperature(0);
       },
       true,
       "",
       200,
       grpc::StatusCode::OK},
      {"prompt fills the context",
       {{"prompt", std::vector<int32_t>(64, 403)}},
       [](v1::GenerateRequest* r) {
         for (int i = 0; i < 64; ++i) r->add_prompt_tokens(403);
       },
       false,
       "leaving no room",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"unknown model",
       {{"prompt", "Once"}, {"model", "gpt-9"}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once");
         r->set_model("gpt-9");
       },
       false,
       "'gpt-9' does not exist",
       404,
       grpc::StatusCode::NOT_FOUND},
      {"token id outside the vocabulary",
       {{"prompt", {1, 99999}}},
       [](v1::GenerateRequest* r) {
         r->add_prompt_tokens(1);
         r->add_prompt_tokens(99999);
       },
       false,
       "outside the vocabulary",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"empty stop string",
       {{"prompt", "Once"}, {"stop", {""}}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once");
         r->mutable_options()->add_stop("");
       },
       false,
       "is empty",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"stop string over the byte limit",
       {{"prompt", "Once"}, {"stop", std::string(kMaxStopBytes + 1, 'x')}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once");
         r->mutable_options()->add_stop(std::string(kMaxStopBytes + 1, 'x'));
       },
       false,
       "at most 256",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"logit_bias banning the greedy choice",
       {{"prompt", "Once upon a time"},
        {"max_tokens", 4},
        {"temperature", 0},
        {"logit_bias", {{"403", -100}, {"300", -100}}}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once upon a time");
         r->mutable_options()->set_max_tokens(4);
         r->mutable_options()->mutable_sampling()->set_temperature(0);
         (*r->mutable_options()->mutable_logit_bias())[403] = -100;
         (*r->mutable_options()->mutable_logit_bias())[300] = -100;
       },
       true,
       "",
       200,
       grpc::StatusCode::OK},
      {"logit_bias outside the vocabulary",
       {{"prompt", "Once"}, {"logit_bias", {{"99999", 1}}}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once");
         (*r->mutable_options()->mutable_logit_bias())[99999] = 1;
       },
       false,
       "outside the vocabulary",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
      {"forced_output on a server that does not allow it",
       {{"prompt", "Once"}, {"forced_output", "x"}},
       [](v1::GenerateRequest* r) {
         r->set_prompt("Once");
         r->mutable_options()->set_forced_output("x");
       },
       false,
       "allow_forced_output",
       400,
       grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    int status = 0;
    grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
    const Outcome h = ViaHttp(c, &status);
    const Outcome g = ViaGrpc(c, &code);
    EXPECT_EQ(status, c.http_status) << h.error;
    EXPECT_EQ(code, c.grpc_code) << g.error;
    EXPECT_EQ(h.ok, g.ok);
    if (c.ok) {
      EXPECT_EQ(h.text, g.text);
      EXPECT_EQ(h.completion_tokens, g.completion_tokens);
    } else {
      EXPECT_NE(h.error.find(c.needle), std::string::npos) << h.error;
      EXPECT_NE(g.error.find(c.needle), std::string::npos) << g.error;
    }
  }
}

}  // namespace
}  // namespace sparrow::server
