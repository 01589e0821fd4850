#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "server/grpc/admin_service.h"
#include "server/grpc/sparrow_service.h"

namespace sparrow::server {
namespace {

// Process-wide gRPC switches; they must be set before the first ServerBuilder is made.
void EnableGrpcPlugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

}  // namespace

Result<std::unique_ptr<GrpcServer>> StartGrpcServer(ServerContext& ctx, const std::string& address,
                                                    const std::string& tls_cert,
                                                    const std::string& tls_key) {
  const size_t colon = address.rfind(':');
  if (address.empty() || colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgument("gRPC address '" + address + "' is not host:port");
  }
  auto credentials = ServerCredentialsFor(tls_cert, tls_key);
  if (!credentials.ok()) return credentials.status();
  EnableGrpcPlugins();

  std::unique_ptr<GrpcServer> server(new GrpcServer());
  server->service_ = std::make_unique<SparrowService>(ctx);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second sparrowd would then share the port silently
  // and receive half of the calls. Refuse a port that is taken instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, *credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  server->admin_service_ = std::make_unique<AdminService>(ctx);
  builder.RegisterService(server->admin_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return IoError("gRPC: cannot listen on '" + address + "' (in use, or not a local address)");
  }
  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  if (health != nullptr) {
    health->SetServingStatus(true);
    health->SetServingStatus("sparrow.v1.Sparrow", true);
  }
  return server;
}

GrpcServer::~GrpcServer() {
  Shutdown(std::chrono::milliseconds(0));
}

void GrpcServer::Shutdown(std::chrono::milliseconds deadline) {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->Shutdown();  // watchers see NOT_SERVING while calls drain
  }
  server_->Shutdown(std::chrono::system_clock::now() + deadline);
  server_->Wait();
}

Result<std::string> ReadPem(const std::string& path, const char* key) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().find("-----BEGIN ") == std::string::npos) {
    return InvalidArgument("config: " + std::string(key) + " '" + path +
                           "' cannot be read or is not PEM");
  }
  return text.str();
}

// TLS 1.2+ (gRPC's floor) with our certificate; clients are not asked for one: they
// authenticate with keys.
Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const std::string& tls_cert,
                                                                      const std::string& tls_key) {
  if (tls_cert.empty() && tls_key.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadPem(tls_cert, "tls_cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(tls_key, "tls_key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

}  // namespace sparrow::server
