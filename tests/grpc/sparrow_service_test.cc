// The sparrow.v1.Sparrow RPCs against a real server on loopback, through the generated stub.
#include "server/grpc/sparrow_service.h"

#include <gtest/gtest.h>

#include "tests/grpc/test_server.h"
#include "tests/util/golden.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

struct StreamResult {
  grpc::Status status;
  std::string text;
  std::vector<int32_t> ids;
  std::vector<v1::GenerateResponse> messages;
};

template <typename Request>
StreamResult Collect(v1::Sparrow::Stub& stub, const Request& request,
                     grpc::ClientContext* context) {
  StreamResult r;
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader;
  if constexpr (std::is_same_v<Request, v1::GenerateRequest>) {
    reader = stub.Generate(context, request);
  } else {
    reader = stub.Chat(context, request);
  }
  v1::GenerateResponse m;
  while (reader->Read(&m)) {
    r.text += m.text();
    r.ids.insert(r.ids.end(), m.token_ids().begin(), m.token_ids().end());
    r.messages.push_back(m);
  }
  r.status = reader->Finish();
  return r;
}

template <typename Request>
StreamResult Collect(v1::Sparrow::Stub& stub, const Request& request) {
  grpc::ClientContext context;
  return Collect(stub, request, &context);
}

class SparrowServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TestServer::Start();
    ASSERT_NE(server_, nullptr);
  }
  std::unique_ptr<TestServer> server_;
};

TEST_F(SparrowServiceTest, GreedyGenerateMatchesLlamaCpp) {
  const GoldenFile golden = LoadGolden(TestdataPath("golden/stories260K.json"));
  ASSERT_FALSE(golden.prompts.empty());
  const GoldenPrompt& g = golden.prompts[0];
  ASSERT_EQ(g.prompt, "Once upon a time");

  v1::GenerateRequest req;
  req.set_prompt(g.prompt);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_max_tokens(48);
  StreamResult r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.text, g.generated_text_bytes);
  EXPECT_EQ(r.ids, g.generated_tokens);

  // Only the last message finishes, and it carries usage and timings.
  ASSERT_GE(r.messages.size(), 2u);
  for (size_t i = 0; i + 1 < r.messages.size(); ++i) {
    EXPECT_EQ(r.messages[i].finish_reason(), v1::FINISH_REASON_UNSPECIFIED);
  }
  const v1::GenerateResponse& last = r.messages.back();
  EXPECT_EQ(last.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(last.usage().prompt_tokens(), 5);
  EXPECT_EQ(last.usage().completion_tokens(), 48);
  EXPECT_GT(last.timings().total_ms(), 0);
  EXPECT_TRUE(last.logprobs().empty());  // not asked for
  EXPECT_TRUE(WaitForIdle(server_->ctx()));
}

// Predicted Outputs over gRPC: llama.cpp's greedy answer as the prediction drafts it whole, the
// answer is unchanged, and Usage counts the prediction's tokens; without one they are unset.
TEST_F(SparrowServiceTest, APredictionDraftsAndUsageCountsIt) {
  const GoldenFile golden = LoadGolden(TestdataPath("golden/stories260K.json"));
  ASSERT_FALSE(golden.prompts.empty());
  const GoldenPrompt& g = golden.prompts[0];
  v1::GenerateRequest req;
  req.set_prompt(g.prompt);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_max_tokens(48);
  req.mutable_options()->set_prediction(g.generated_text_bytes);
  StreamResult r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.ids, g.generated_tokens);
  const v1::Usage& u = r.messages.back().usage();
  ASSERT_TRUE(u.has_accepted_prediction_tokens());
  // The prediction is tokenized alone: its first token or two may split differently.
  EXPECT_GE(u.accepted_prediction_tokens(), 46) << u.ShortDebugString();
  EXPECT_LE(u.rejected_prediction_tokens(), 2) << u.ShortDebugString();

  req.mutable_options()->clear_prediction();
  r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_FALSE(r.messages.back().usage().has_accepted_prediction_tokens());
}

TEST_F(SparrowServiceTest, GenerateFromTokenIdsAndLogprobs) {
  v1::GenerateRequest req;
  for (int id : {1, 403, 407, 261, 378}) req.add_prompt_tokens(id);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_max_tokens(4);
  req.mutable_options()->set_logprobs(true);
  StreamResult r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.ids, (std::vector<int32_t>{432, 383, 286, 261}));
  size_t n_logprobs = 0;
  for (const auto& m : r.messages) {
    EXPECT_EQ(m.logprobs_size(), m.token_ids_size());
    for (float lp : m.logprobs()) EXPECT_LE(lp, 0.0f);
    n_logprobs += m.logprobs_size();
  }
  EXPECT_EQ(n_logprobs, 4u);
}

TEST_F(SparrowServiceTest, StopStringEndsTheStreamWithoutTheStopText) {
  v1::GenerateRequest req;
  req.set_prompt("Once upon a time");
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_max_tokens(48);
  req.mutable_options()->add_stop("Lily");
  StreamResult r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.text, ", there was a little girl named ");
  EXPECT_EQ(r.messages.back().finish_reason(), v1::FINISH_REASON_STOP);
  EXPECT_LT(r.messages.back().usage().completion_tokens(), 48);
}

TEST_F(SparrowServiceTest, ChatStreamsAReply) {
  v1::ChatRequest req;
  auto* m = req.add_messages();
  m->set_role("user");
  m->set_content("Tell me a story.");
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_max_tokens(8);
  StreamResult r = Collect(server_->stub(), req);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  ASSERT_FALSE(r.messages.empty());
  const v1::GenerateResponse& last = r.messages.back();
  EXPECT_NE(last.finish_reason(), v1::FINISH_REASON_UNSPECIFIED);
  EXPECT_GT(last.usage().prompt_tokens(), 5);
  EXPECT_GE(last.usage().completion_tokens(), 1);
  EXPECT_LE(last.usage().completion_tokens(), 8);
  EXPECT_EQ(static_cast<int64_t>(r.ids.size()), last.usage().completion_tokens());
}

TEST_F(SparrowServiceTest, TokenizeDetokenizeRoundTrip) {
  grpc::ClientContext c1;
  v1::TokenizeRequest treq;
  treq.set_text("Once upon a time");
  v1::TokenizeResponse tres;
  ASSERT_TRUE(server_->stub().Tokenize(&c1, treq, &tres).ok());
  EXPECT_EQ(std::vector<int32_t>(tres.tokens().begin(), tres.tokens().end()),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));
  ASSERT_EQ(tres.pieces_size(), 5);
  EXPECT_EQ(tres.pieces(1), " Once");

  grpc::ClientContext c2;
  v1::DetokenizeRequest dreq;
  *dreq.mutable_tokens() = tres.tokens();
  dreq.set_remove_special(true);
  v1::DetokenizeResponse dres;
  ASSERT_TRUE(server_->stub().Detokenize(&c2, dreq, &dres).ok());
  // As llama.cpp does: the space the tokenizer put in front of the text stays when BOS is removed.
  EXPECT_EQ(dres.text(), " Once upon a time");
}

// Byte tokens are parts of UTF-8 characters: pieces travel as bytes, Detokenize's text is
// sanitized and its raw field exact. (Before, the C++ client got no message at all.)
TEST_F(SparrowServiceTest, MultiByteTextAndByteTokensCrossTheWire) {
  grpc::ClientContext c;
  v1::TokenizeRequest treq;
  treq.set_text("\xC3\xA9\xE4\xB8\x8A");  // "é上"
  treq.set_add_special(false);
  v1::TokenizeResponse tres;
  ASSERT_TRUE(server_->stub().Tokenize(&c, treq, &tres).ok());
  std::string joined;
  for (const std::string& p : tres.pieces()) joined += p;
  EXPECT_EQ(joined, " \xC3\xA9\xE4\xB8\x8A");  // SPM's leading space, then the bytes
  EXPECT_GT(tres.pieces_size(), 2);            // byte tokens: partial characters

  const int32_t lead = server_->ctx().served()->tokenizer->FindToken("<0xC3>");
  ASSERT_GE(lead, 0);
  grpc::ClientContext c2;
  v1::DetokenizeRequest dreq;
  dreq.add_tokens(lead);
  v1::DetokenizeResponse dres;
  ASSERT_TRUE(server_->stub().Detokenize(&c2, dreq, &dres).ok());
  EXPECT_EQ(dres.raw(), "\xC3");
  EXPECT_EQ(dres.text(), "\xEF\xBF\xBD");  // U+FFFD

  grpc::ClientContext c3;
  v1::DetokenizeRequest whole;
  *whole.mutable_tokens() = tres.tokens();
  ASSERT_TRUE(server_->stub().Detokenize(&c3, whole, &dres).ok());
  EXPECT_EQ(dres.text(), "\xC3\xA9\xE4\xB8\x8A");  // the SPM space goes, as in llama.cpp
  EXPECT_EQ(dres.raw(), dres.text());
}

TEST_F(SparrowServiceTest, ListModelsDescribesTheServedModel) {
  grpc::ClientContext c;
  v1::ListModelsResponse res;
  ASSERT_TRUE(server_->stub().ListModels(&c, v1::ListModelsRequest(), &res).ok());
  ASSERT_EQ(res.models_size(), 1);
  const v1::ModelInfo& m = res.models(0);
  EXPECT_EQ(m.id(), "stories260K");
  EXPECT_EQ(m.architecture(), "llama");
  EXPECT_EQ(m.n_vocab(), 512);
  EXPECT_EQ(m.n_ctx(), server_->ctx().served()->n_ctx);
  EXPECT_GT(m.n_params(), 200000);
  EXPECT_EQ(m.path(), "stories260K.gguf");  // the file name only, never the server's directories
}

// Each malformed request is answered with INVALID_ARGUMENT naming the field.
TEST_F(SparrowServiceTest, InvalidRequestsNameTheField) {
  auto expect_invalid = [&](const StreamResult& r, const std::string& field) {
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_NE(r.status.error_message().find(field), std::string::npos) << r.status.error_message();
    EXPECT_TRUE(r.messages.empty());
  };
  v1::GenerateRequest base;
  base.set_prompt("Once upon a time");

  v1::GenerateRequest req = base;
  req.mutable_options()->mutable_sampling()->set_temperature(-1);
  expect_invalid(Collect(server_->stub(), req), "options.sampling.temperature");
  req = base;
  req.mutable_options()->mutable_sampling()->set_top_p(1.5f);
  expect_invalid(Collect(server_->stub(), req), "options.sampling.top_p");
  req = base;
  req.mutable_options()->set_max_tokens(-2);
  expect_invalid(Collect(server_->stub(), req), "options.max_tokens");
  req = base;
  req.mutable_options()->add_stop("");
  expect_invalid(Collect(server_->stub(), req), "options.stop[0]");
  req = base;
  req.add_prompt_tokens(1);
  expect_invalid(Collect(server_->stub(), req), "prompt_tokens");
  expect_invalid(Collect(server_->stub(), v1::GenerateRequest()), "prompt");
  req = v1::GenerateRequest();
  req.add_prompt_tokens(-1);
  expect_invalid(Collect(server_->stub(), req), "prompt_tokens[0]");
  expect_invalid(Collect(server_->stub(), v1::ChatRequest()), "messages");

  // A prompt longer than the context is refused by the scheduler, still INVALID_ARGUMENT.
  req = v1::GenerateRequest();
  for (int64_t i = 0; i < server_->ctx().served()->n_ctx + 10; ++i) req.add_prompt_tokens(300);
  StreamResult r = Collect(server_->stub(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext c;
  v1::DetokenizeRequest dreq;
  dreq.add_tokens(1);
  dreq.add_tokens(100000);
  v1::DetokenizeResponse dres;
  grpc::Status s = server_->stub().Detokenize(&c, dreq, &dres);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("tokens[1]"), std::string::npos) << s.error_message();

  req = base;
  req.set_model("no-such-model");
  r = Collect(server_->stub(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(r.status.error_message().find("no-such-model"), std::string::npos);
  EXPECT_TRUE(WaitForIdle(server_->ctx()));
}

TEST(SparrowServiceQueueTest, FullQueueIsResourceExhausted) {
  ServerConfig config = TestServer::DefaultConfig();
  config.max_queue = 0;  // every Submit is refused as if the queue were full
  auto server = TestServer::Start(config);
  ASSERT_NE(server, nullptr);
  v1::GenerateRequest req;
  req.set_prompt("Once upon a time");
  StreamResult r = Collect(server->stub(), req);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(r.status.error_message().find("queue"), std::string::npos) << r.status.error_message();
}

}  // namespace
}  // namespace sparrow::testing
