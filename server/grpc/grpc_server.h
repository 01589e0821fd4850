#pragma once
// GrpcServer: the running gRPC endpoint of sparrowd: the sparrow.v1.Sparrow service, the
// sparrow.admin.v1.Admin service (remote control),
// standard grpc.health.v1 health service and server reflection, on one listening address.
// Thread-safe: Shutdown may be called from any thread, once or more.
#include <chrono>
#include <memory>
#include <string>

#include "engine/common/result.h"
#include "server/core/server_context.h"

namespace grpc {
class Server;
class ServerCredentials;
}  // namespace grpc

namespace sparrow::server {

class SparrowService;
class AdminService;

class GrpcServer {
 public:
  ~GrpcServer();  // Shutdown(0) if still running

  // The port actually bound (useful when the address asked for port 0).
  int port() const { return port_; }

  // Stops accepting calls, lets running ones end until `deadline`, then cancels the rest
  // (their scheduler requests are cancelled too) and waits for them to be gone. Call it before
  // shutting down the scheduler. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);

 private:
  friend Result<std::unique_ptr<GrpcServer>> StartGrpcServer(ServerContext& ctx,
                                                             const std::string& address,
                                                             const std::string& tls_cert,
                                                             const std::string& tls_key);
  GrpcServer() = default;

  std::unique_ptr<SparrowService> service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

// Listens on `address` ("127.0.0.1:0", "0.0.0.0:50051", "[::1]:0") and serves until Shutdown:
// over TLS when `tls_cert` and `tls_key` (PEM files) are given, else in clear. `ctx` must outlive
// the server. InvalidArgument when the address is malformed or a TLS file unreadable, IoError
// when it cannot be bound.
Result<std::unique_ptr<GrpcServer>> StartGrpcServer(ServerContext& ctx, const std::string& address,
                                                    const std::string& tls_cert = "",
                                                    const std::string& tls_key = "");

// A PEM file's text; InvalidArgument naming `key` (the setting) when it cannot be read or is not
// PEM.
Result<std::string> ReadPem(const std::string& path, const char* key);

// TLS 1.2+ with the certificate and key when both are set, else plain.
Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(const std::string& tls_cert,
                                                                      const std::string& tls_key);

}  // namespace sparrow::server
