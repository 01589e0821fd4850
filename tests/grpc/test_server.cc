#include "tests/grpc/test_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/util/test_paths.h"

namespace sparrow::testing {

ServerConfig TestServer::DefaultConfig() {
  ServerConfig config;
  config.model = ModelPath("stories260K.gguf");
  config.threads = 1;
  config.max_running = 4;
  config.memory_pressure = 2;  // the machine's own pressure must not decide a test's outcome
  config.hw_profile = "none";
  return config;
}

std::unique_ptr<TestServer> TestServer::Start(ServerConfig config) {
  auto ctx = server::CreateServerContext(config);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  if (!ctx.ok()) return nullptr;
  auto t = std::unique_ptr<TestServer>(new TestServer());
  t->ctx_ = std::move(*ctx);
  auto srv = server::StartGrpcServer(*t->ctx_, "127.0.0.1:0");
  EXPECT_TRUE(srv.ok()) << srv.status().ToString();
  if (!srv.ok()) return nullptr;
  t->server_ = std::move(*srv);
  EXPECT_GT(t->server_->port(), 0);
  t->channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(t->server_->port()),
                                    grpc::InsecureChannelCredentials());
  t->stub_ = sparrow::v1::Sparrow::NewStub(t->channel_);
  return t;
}

TestServer::~TestServer() {
  // gRPC first: its calls cancel their scheduler requests and wait for them.
  if (server_) server_->Shutdown(std::chrono::milliseconds(2000));
  if (ctx_) ctx_->served()->scheduler->Shutdown(std::chrono::milliseconds(0));
}

bool WaitForIdle(server::ServerContext& ctx) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    const SchedulerStats s = ctx.served()->scheduler->Stats();
    if (s.kv.used_blocks == 0 && s.running == 0 && s.waiting == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace sparrow::testing
