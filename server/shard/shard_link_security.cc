#include "server/shard/shard_link_security.h"

#include <fstream>
#include <sstream>

#include "config/config_loader.h"
#include "server/core/key_ring.h"
#include "server/grpc/grpc_server.h"

namespace sparrow::server {

namespace {

constexpr size_t kMinWorkerKey = 16;

bool SameKey(std::string_view a, std::string_view b) {
  // Constant time in the key's bytes: the length alone is no secret worth hiding.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string PeerCertPath(const ServerConfig& c) {
  return c.shard_peer_cert.empty() ? c.tls_cert : c.shard_peer_cert;
}

const char* PeerCertSetting(const ServerConfig& c) {
  return c.shard_peer_cert.empty() ? "tls_cert" : "shard_peer_cert";
}

}  // namespace

Result<std::vector<std::string>> ReadWorkerKeys(const ServerConfig& config) {
  if (config.worker_key_file.empty()) {
    return InvalidArgument(
        "config: the shard link needs a worker key (worker_key_file); the admin key is never "
        "used for it");
  }
  std::ifstream in(config.worker_key_file, std::ios::binary);
  if (!in) {
    return InvalidArgument("config: 'worker_key_file' names " + config.worker_key_file +
                           ", which cannot be read");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  SPARROW_ASSIGN_OR_RETURN(auto entries,
                           KeyRing::ParseKeyFile(ss.str(), config.worker_key_file, kMinWorkerKey));
  std::vector<std::string> keys;
  for (auto& e : entries) keys.push_back(std::move(e.key));
  if (keys.empty()) {
    return InvalidArgument("config: 'worker_key_file' " + config.worker_key_file + " holds no key");
  }
  // A worker key that is also an admin key would put the admin key on the link after all.
  std::vector<std::string> admin;
  if (!config.admin_key.empty()) admin.push_back(config.admin_key);
  if (!config.admin_key_file.empty()) {
    std::ifstream a(config.admin_key_file, std::ios::binary);
    std::stringstream text;
    text << a.rdbuf();
    auto parsed = KeyRing::ParseKeyFile(text.str(), config.admin_key_file, 1);
    if (parsed.ok()) {
      for (auto& e : *parsed) admin.push_back(std::move(e.key));
    }
  }
  for (const std::string& k : keys) {
    for (const std::string& a : admin) {
      if (SameKey(k, a)) {
        return InvalidArgument("config: a key of 'worker_key_file' " + config.worker_key_file +
                               " is also an admin key: the shard link must never carry the "
                               "admin key; give the workers a key of their own");
      }
    }
  }
  return keys;
}

grpc::Status WorkerKeyCheck::Process(const InputMetadata& metadata, grpc::AuthContext*,
                                     OutputMetadata* consumed, OutputMetadata*) {
  constexpr std::string_view kBearer = "Bearer ";
  const auto it = metadata.find("authorization");
  if (it != metadata.end()) {
    const std::string_view value(it->second.data(), it->second.size());
    if (value.substr(0, kBearer.size()) == kBearer) {
      const std::string_view key = value.substr(kBearer.size());
      bool match = false;
      for (const std::string& k : keys_) match |= SameKey(key, k);
      if (match) {
        // The service never sees the key.
        consumed->insert({"authorization", std::string(value)});
        return grpc::Status::OK;
      }
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      it == metadata.end()
                          ? "the shard link needs a worker key (authorization: Bearer <key>)"
                          : "the worker key is wrong");
}

Result<std::shared_ptr<grpc::ServerCredentials>> WorkerServerCredentials(
    const ServerConfig& config, std::vector<std::string> keys) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (config.tls_cert.empty()) {
    if (!IsLoopbackHost(config.host)) {
      return InvalidArgument("config: a worker on '" + config.host +
                             "' (not loopback) needs TLS (tls_cert and tls_key)");
    }
    creds = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  } else {
    SPARROW_ASSIGN_OR_RETURN(std::string cert, ReadPem(config.tls_cert, "tls_cert"));
    SPARROW_ASSIGN_OR_RETURN(std::string key, ReadPem(config.tls_key, "tls_key"));
    grpc::SslServerCredentialsOptions options(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.pem_key_cert_pairs.push_back({key, cert});
    SPARROW_ASSIGN_OR_RETURN(options.pem_root_certs,
                             ReadPem(PeerCertPath(config), PeerCertSetting(config)));
    creds = grpc::SslServerCredentials(options);
  }
  creds->SetAuthMetadataProcessor(std::make_shared<WorkerKeyCheck>(std::move(keys)));
  return creds;
}

std::string AddressHost(const std::string& address) {
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

Result<std::shared_ptr<grpc::ChannelCredentials>> CoordinatorCredentials(
    const ServerConfig& config, const std::vector<std::string>& addresses) {
  if (config.tls_cert.empty()) {
    for (const std::string& a : addresses) {
      if (!IsLoopbackHost(AddressHost(a))) {
        return InvalidArgument(
            "config: worker " + a +
            " is not on loopback and this coordinator has no TLS: the worker key and the hidden "
            "states would cross the network in clear text. Set 'tls_cert' and 'tls_key' (the "
            "workers then check this device's certificate)");
      }
    }
    return grpc::experimental::LocalCredentials(LOCAL_TCP);
  }
  grpc::SslCredentialsOptions ssl;
  SPARROW_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                           ReadPem(PeerCertPath(config), PeerCertSetting(config)));
  SPARROW_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(config.tls_cert, "tls_cert"));
  SPARROW_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(config.tls_key, "tls_key"));
  return grpc::SslCredentials(ssl);
}

}  // namespace sparrow::server
