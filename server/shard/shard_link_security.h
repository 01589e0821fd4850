#pragma once
// Who may speak on the shard link. A worker accepts calls only with one of its worker keys
// (worker_key_file; never the admin key), checked by WorkerKeyCheck from the call's metadata
// before gRPC reads any of its messages, so an unauthenticated peer cannot make it buffer one.
// Off loopback both ends need TLS, and the worker asks for the coordinator's certificate
// (mutual TLS, pinned to shard_peer_cert or this device's tls_cert); on loopback without a
// certificate they speak gRPC's local credentials, which refuse any peer not on this machine.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <memory>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/common/result.h"

namespace sparrow::server {

// The keys of worker_key_file (KeyRing's format, at least 16 characters each); InvalidArgument
// naming the file when it is unset, unreadable or holds none.
Result<std::vector<std::string>> ReadWorkerKeys(const ServerConfig& config);

// UNAUTHENTICATED unless the call's metadata is `authorization: Bearer <one of the keys>`
// (compared in constant time). Runs inline in gRPC's call setup.
class WorkerKeyCheck final : public grpc::AuthMetadataProcessor {
 public:
  explicit WorkerKeyCheck(std::vector<std::string> keys) : keys_(std::move(keys)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* response) override;

 private:
  std::vector<std::string> keys_;
};

// The worker's listening credentials, with WorkerKeyCheck installed: mutual TLS with
// tls_cert, else local credentials (a worker off loopback without TLS is refused, naming why).
Result<std::shared_ptr<grpc::ServerCredentials>> WorkerServerCredentials(
    const ServerConfig& config, std::vector<std::string> keys);

// The coordinator's credentials for its workers: TLS presenting tls_cert and checking the
// workers' against shard_peer_cert (or tls_cert); without TLS, local credentials, and a worker
// address that is not loopback is refused naming it.
Result<std::shared_ptr<grpc::ChannelCredentials>> CoordinatorCredentials(
    const ServerConfig& config, const std::vector<std::string>& addresses);

// "host:port" or "[v6]:port" -> the host.
std::string AddressHost(const std::string& address);

}  // namespace sparrow::server
