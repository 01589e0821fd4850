// Streaming behaviour of GenerateReactor on a real server: cancellation, concurrency and
// shutdown while streams are open.
#include "server/grpc/generate_reactor.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/grpc/test_server.h"
#include "tests/util/golden.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

v1::GenerateRequest LongRequest(const server::ServerContext& ctx) {
  v1::GenerateRequest req;
  req.set_prompt("Once upon a time");
  req.mutable_options()->mutable_sampling()->set_temperature(1.0f);
  req.mutable_options()->mutable_sampling()->set_seed(7);
  req.mutable_options()->set_max_tokens(ctx.served()->n_ctx - 8);
  return req;
}

TEST(GenerateReactorTest, ClientCancelFreesKvBlocks) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  // The request must still be running when the cancel lands; a tiny model may finish first,
  // so try a few times and require one real cancellation. Only the server's count says so: the
  // client reports CANCELLED after TryCancel even when the server had already finished.
  bool cancelled = false;
  for (int attempt = 0; attempt < 20 && !cancelled; ++attempt) {
    grpc::ClientContext context;
    auto reader = server->stub().Generate(&context, LongRequest(server->ctx()));
    v1::GenerateResponse m;
    ASSERT_TRUE(reader->Read(&m));
    context.TryCancel();
    while (reader->Read(&m)) {
    }
    const grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok() || status.error_code() == grpc::StatusCode::CANCELLED)
        << status.error_message();
    ASSERT_TRUE(WaitForIdle(server->ctx()));
    EXPECT_EQ(server->ctx().served()->scheduler->Stats().kv.used_blocks, 0);
    cancelled = server->ctx().served()->scheduler->Stats().requests_cancelled >= 1;
  }
  EXPECT_TRUE(cancelled);
  EXPECT_GE(server->ctx().served()->scheduler->Stats().requests_cancelled, 1);
  // Counted in /metrics, by the scheduler's finish reason and by the gRPC status.
  const std::string m = server->ctx().metrics.Render(server->ctx().served()->scheduler->Stats());
  EXPECT_NE(m.find("sparrow_requests_total{status=\"cancelled\"} "), std::string::npos) << m;
  EXPECT_NE(m.find("sparrow_responses_total{frontend=\"grpc\",code=\"CANCELLED\"} "),
            std::string::npos)
      << m;
}

TEST(GenerateReactorTest, ConcurrentStreamsEachMatchTheGolden) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  const GoldenPrompt g = LoadGolden(TestdataPath("golden/stories260K.json")).prompts.at(0);
  constexpr int kStreams = 4;
  std::vector<std::string> texts(kStreams);
  std::vector<grpc::Status> statuses(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      v1::GenerateRequest req;
      req.set_prompt(g.prompt);
      req.mutable_options()->mutable_sampling()->set_temperature(0);
      req.mutable_options()->set_max_tokens(48);
      grpc::ClientContext context;
      auto reader = server->stub().Generate(&context, req);
      v1::GenerateResponse m;
      while (reader->Read(&m)) texts[i] += m.text();
      statuses[i] = reader->Finish();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_EQ(texts[i], g.generated_text_bytes) << "stream " << i;
  }
  EXPECT_TRUE(WaitForIdle(server->ctx()));
}

TEST(GenerateReactorTest, ShutdownEndsOpenStreams) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  grpc::ClientContext context;
  auto reader = server->stub().Generate(&context, LongRequest(server->ctx()));
  v1::GenerateResponse m;
  ASSERT_TRUE(reader->Read(&m));
  // No grace period: the open call is cancelled and its scheduler request with it.
  server->server().Shutdown(std::chrono::milliseconds(0));
  while (reader->Read(&m)) {
  }
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok() || status.error_code() == grpc::StatusCode::CANCELLED ||
              status.error_code() == grpc::StatusCode::UNAVAILABLE)
      << status.error_code() << " " << status.error_message();
  EXPECT_TRUE(WaitForIdle(server->ctx()));
  EXPECT_EQ(server->ctx().served()->scheduler->Stats().kv.used_blocks, 0);
}

}  // namespace
}  // namespace sparrow::testing
