// GrpcServer lifecycle, the standard health and reflection services, and bearer-key auth.
#include "server/grpc/grpc_server.h"

#include <gtest/gtest.h>

#include "health_wire.grpc.pb.h"
#include "reflection_wire.pb.h"
#include "tests/grpc/test_server.h"

namespace sparrow::testing {
namespace {

namespace refl = sparrow::testing::reflection;

TEST(GrpcServerTest, BindsAKernelChosenPort) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->server().port(), 0);
  EXPECT_LT(server->server().port(), 65536);
}

TEST(GrpcServerTest, RefusesBadAddresses) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  auto bad = server::StartGrpcServer(server->ctx(), "no-port");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  // The port the first server holds cannot be bound twice.
  auto taken = server::StartGrpcServer(server->ctx(),
                                       "127.0.0.1:" + std::to_string(server->server().port()));
  EXPECT_FALSE(taken.ok());
}

TEST(GrpcServerTest, HealthCheckSaysServing) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  auto health = grpc::health::v1::Health::NewStub(server->channel());
  for (const char* service : {"", "sparrow.v1.Sparrow"}) {
    grpc::ClientContext c;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse res;
    const grpc::Status s = health->Check(&c, req, &res);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(res.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

// The services reflection lists, asked without credentials; empty when the call fails.
std::vector<std::string> ReflectedServices(TestServer& server) {
  // Called by path: the real reflection message types are registered by libgrpc++_reflection.
  const grpc::internal::RpcMethod method(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  grpc::ClientContext c;
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             refl::ServerReflectionRequest,
             refl::ServerReflectionResponse>::Create(server.channel().get(), method, &c));
  refl::ServerReflectionRequest req;
  req.set_list_services("*");
  if (!stream->Write(req) || !stream->WritesDone()) return {};
  refl::ServerReflectionResponse res;
  std::vector<std::string> names;
  if (stream->Read(&res)) {
    for (const auto& s : res.list_services_response().service()) names.push_back(s.name());
  }
  while (stream->Read(&res)) {
  }
  if (!stream->Finish().ok()) return {};
  return names;
}

TEST(GrpcServerTest, ReflectionListsTheService) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  const std::vector<std::string> names = ReflectedServices(*server);
  EXPECT_NE(std::find(names.begin(), names.end(), "sparrow.v1.Sparrow"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());
}

TEST(GrpcServerTest, ApiKeyIsRequiredWhenConfigured) {
  ServerConfig config = TestServer::DefaultConfig();
  config.api_key = "s3cret";
  auto server = TestServer::Start(config);
  ASSERT_NE(server, nullptr);
  auto list = [&](const char* authorization) {
    grpc::ClientContext c;
    if (authorization != nullptr) c.AddMetadata("authorization", authorization);
    v1::ListModelsResponse res;
    return server->stub().ListModels(&c, v1::ListModelsRequest(), &res);
  };
  EXPECT_EQ(list(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("s3cret").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer s3cret").error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(list("bearer  s3cret").error_code(), grpc::StatusCode::OK);  // RFC 7235
  // Reflection stays open, like health (server/README.md): it describes the published API only.
  EXPECT_FALSE(ReflectedServices(*server).empty());

  // Streaming calls are guarded too, before anything reaches the scheduler.
  grpc::ClientContext c;
  v1::GenerateRequest req;
  req.set_prompt("Once upon a time");
  auto reader = server->stub().Generate(&c, req);
  v1::GenerateResponse m;
  EXPECT_FALSE(reader->Read(&m));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(server->ctx().served()->scheduler->Stats().requests_finished, 0);
}

TEST(GrpcServerTest, ShutdownIsIdempotent) {
  auto server = TestServer::Start();
  ASSERT_NE(server, nullptr);
  server->server().Shutdown(std::chrono::milliseconds(100));
  server->server().Shutdown(std::chrono::milliseconds(100));
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ListModelsResponse res;
  EXPECT_FALSE(server->stub().ListModels(&c, v1::ListModelsRequest(), &res).ok());
}

}  // namespace
}  // namespace sparrow::testing
