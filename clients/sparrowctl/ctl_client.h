#pragma once
// CtlClient: sparrowctl's connection to one sparrowd: the admin service with the admin key,
// the inference service with the API key, and errors turned into advice (wrong key,
// unreachable host, draining server). Not thread-safe; one per command.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "sparrow/admin/v1/admin.grpc.pb.h"
#include "sparrow/v1/sparrow.grpc.pb.h"

namespace sparrow::ctl {

struct Target {
  std::string host = "127.0.0.1";
  int port = 50051;
  std::string admin_key;   // from --key-file or SPARROW_ADMIN_KEY
  std::string api_key;     // from --api-key-file or SPARROW_API_KEY
  int timeout_ms = 10000;  // per unary call
  // TLS: the certificate to trust (the device's self-signed one, from --ca), or the system's
  // roots when `tls` is set without one.
  std::string ca_file;
  bool tls = false;
};

class CtlClient {
 public:
  // Fails (with *error) only when the --ca file cannot be read.
  static std::unique_ptr<CtlClient> Connect(Target target, std::string* error);

  // Sets up a unary admin call: deadline and the admin key.
  void Prepare(grpc::ClientContext* ctx, bool admin, bool with_deadline = true) const;
  admin::v1::Admin::Stub& admin() { return *admin_; }
  v1::Sparrow::Stub& inference() { return *inference_; }
  const Target& target() const { return target_; }

  // What to tell the operator about a failed call: the server's message plus what to do.
  std::string Explain(const grpc::Status& status) const;

 private:
  explicit CtlClient(Target target) : target_(std::move(target)) {}
  Target target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<admin::v1::Admin::Stub> admin_;
  std::unique_ptr<v1::Sparrow::Stub> inference_;
};

// The first key in a key file (the server's format: "KEY" or "ID KEY" per line, '#' comments),
// or "" with *error set.
std::string ReadKeyFile(const std::string& path, std::string* error);

}  // namespace sparrow::ctl
