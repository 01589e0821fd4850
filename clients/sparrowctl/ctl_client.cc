#include "clients/sparrowctl/ctl_client.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace sparrow::ctl {

std::unique_ptr<CtlClient> CtlClient::Connect(Target target, std::string* error) {
  std::unique_ptr<CtlClient> c(new CtlClient(std::move(target)));
  const Target& t = c->target_;
  const bool v6 = t.host.find(':') != std::string::npos && t.host.front() != '[';
  const std::string address = (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!t.ca_file.empty() || t.tls) {
    grpc::SslCredentialsOptions options;
    if (!t.ca_file.empty()) {
      std::ifstream in(t.ca_file, std::ios::binary);
      std::ostringstream pem;
      if (in) pem << in.rdbuf();
      if (!in || pem.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
        *error = "--ca '" + t.ca_file + "' cannot be read or holds no PEM certificate";
        return nullptr;
      }
      options.pem_root_certs = pem.str();
    }
    credentials = grpc::SslCredentials(options);
  }
  c->channel_ = grpc::CreateChannel(address, credentials);
  c->admin_ = admin::v1::Admin::NewStub(c->channel_);
  c->inference_ = v1::Sparrow::NewStub(c->channel_);
  return c;
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
    case grpc::StatusCode::UNAVAILABLE: {
      if (out.find("draining") != std::string::npos) {
        return out + "\n  (resume it with: sparrowctl resume)";
      }
      const bool tls = !target_.ca_file.empty() || target_.tls;
      std::string reason = out + " " + s.error_details();
      for (char& ch : reason) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (tls && (reason.find("certificate_verify_failed") != std::string::npos ||
                  reason.find("certificate verify failed") != std::string::npos)) {
        return "the certificate of " + where + " is not trusted: " + out +
               "\n  Pass the device's own certificate (its tls_cert file) with --ca FILE.";
      }
      if (tls && (reason.find("wrong_version_number") != std::string::npos ||
                  reason.find("wrong version number") != std::string::npos)) {
        return where + " does not speak TLS: " + out +
               "\n  Its tls_cert is not set; connect without --ca (or set up TLS on the server).";
      }
      if (tls && reason.find("ssl") != std::string::npos) {
        return "TLS with " + where + " failed: " + out +
               "\n  Is --ca the server's certificate, and is --host a name or address it lists?";
      }
      std::string hint =
          "\n  Is it running, and is --host/--port its host and grpc_port (default 50051)?";
      if (!tls) hint += "\n  If the server has TLS on (tls_cert), add --ca with its certificate.";
      return "cannot reach sparrowd's gRPC port at " + where + ": " + out + hint;
    }
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "no answer from " + where + " within " + std::to_string(target_.timeout_ms) +
             " ms (--timeout-ms)";
    case grpc::StatusCode::UNAUTHENTICATED:
      return out +
             "\n  Pass the admin key with --key-file FILE or SPARROW_ADMIN_KEY_FILE (a file "
             "holding a line of the server's admin_key_file), or the key itself in "
             "SPARROW_ADMIN_KEY.";
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
