#pragma once
// TestServer: a real sparrowd gRPC endpoint for tests: stories260K behind a scheduler, the gRPC
// server on 127.0.0.1 with a kernel-chosen port, and a channel plus stub pointing at it.
// Not thread-safe; one per test.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "config/server_config.h"
#include "server/core/server_context.h"
#include "server/grpc/grpc_server.h"
#include "sparrow/v1/sparrow.grpc.pb.h"

namespace sparrow::testing {

class TestServer {
 public:
  // Fails the calling test (ASSERT) when the model or the server cannot be started.
  static std::unique_ptr<TestServer> Start(ServerConfig config = DefaultConfig());
  static ServerConfig DefaultConfig();
  ~TestServer();

  server::ServerContext& ctx() { return *ctx_; }
  server::GrpcServer& server() { return *server_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  sparrow::v1::Sparrow::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<server::ServerContext> ctx_;
  std::unique_ptr<server::GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<sparrow::v1::Sparrow::Stub> stub_;
};

// Waits (up to 10 s) until the scheduler holds no KV blocks and runs nothing; false on timeout.
bool WaitForIdle(server::ServerContext& ctx);

}  // namespace sparrow::testing
