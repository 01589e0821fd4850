#include "clients/sparrowctl/ctl_client.h"

#include <fstream>
#include <sstream>

namespace sparrow::ctl {

CtlClient::CtlClient(Target target) : target_(std::move(target)) {
  const bool v6 = target_.host.find(':') != std::string::npos && target_.host.front() != '[';
  const std::string address =
      (v6 ? "[" + target_.host + "]" : target_.host) + ":" + std::to_string(target_.port);
  channel_ = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  admin_ = admin::v1::Admin::NewStub(channel_);
  inference_ = v1::Sparrow::NewStub(channel_);
}

void CtlClient::Prepare(grpc::ClientContext* ctx, bool admin, bool with_deadline) const {
  if (with_deadline) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(target_.timeout_ms));
  }
  const std::string& key = admin ? target_.admin_key : target_.api_key;
  if (!key.empty()) ctx->AddMetadata("authorization", "Bearer " + key);
}

std::string CtlClient::Explain(const grpc::Status& s) const {
  const std::string where = target_.host + ":" + std::to_string(target_.port);
  std::string out = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (out.find("draining") != std::string::npos) {
        return out + "\n  (resume it with: sparrowctl resume)";
      }
      return "cannot reach sparrowd's gRPC port at " + where + ": " + out +
             "\n  Is it running, and is --host/--port its host and grpc_port (default 50051)?";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "no answer from " + where + " within " + std::to_string(target_.timeout_ms) +
             " ms (--timeout-ms)";
    case grpc::StatusCode::UNAUTHENTICATED:
      return out +
             "\n  Pass the admin key with --key-file FILE (a line of the server's "
             "admin_key_file) or SPARROW_ADMIN_KEY.";
    case grpc::StatusCode::PERMISSION_DENIED:
      return out;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return out + "\n  (too many failed attempts lock an address out for a minute)";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "the server at " + where + " has no admin service (an older sparrowd?): " + out;
    default:
      return out.empty() ? "call failed with code " + std::to_string(s.error_code()) : out;
  }
}

std::string ReadKeyFile(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read key file '" + path + "'";
    return "";
  }
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string a, b;
    words >> a >> b;
    if (a.empty() || a[0] == '#') continue;
    return b.empty() ? a : b;
  }
  *error = "key file '" + path + "' holds no key";
  return "";
}

}  // namespace sparrow::ctl
