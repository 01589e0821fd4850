#include "server/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>

namespace sparrow::server {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's reason for the last failure, which says what is wrong with a file ("no start line":
// not PEM; "key values mismatch": another certificate's key).
std::string OpenSslReason(const boost::system::error_code& ec) {
  std::string reason = ec.message();
  if (const unsigned long e = ERR_get_error(); e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    reason = buf;
  }
  ERR_clear_error();
  return reason;
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const std::string& cert_file,
                                                           const std::string& key_file) {
  if (cert_file.empty() || key_file.empty()) {
    return InvalidArgument("config: 'tls_cert' and 'tls_key' go together; set both or neither");
  }
  for (const std::string* f : {&cert_file, &key_file}) {
    if (!std::ifstream(*f)) {
      return InvalidArgument("config: cannot read '" + *f + "' (" +
                             (f == &cert_file ? "tls_cert" : "tls_key") + ")");
    }
  }
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return InvalidArgument("config: tls_cert '" + cert_file +
                           "' is not a PEM certificate chain: " + OpenSslReason(ec));
  }
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    const std::string reason = OpenSslReason(ec);
    if (reason.find("mismatch") != std::string::npos) {
      return InvalidArgument("config: tls_key '" + key_file + "' is not the key of tls_cert '" +
                             cert_file + "': " + reason);
    }
    return InvalidArgument("config: tls_key '" + key_file +
                           "' is not a PEM private key: " + reason);
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return InvalidArgument("config: tls_key '" + key_file + "' is not the key of tls_cert '" +
                           cert_file + "': " + OpenSslReason({}));
  }
  return ctx;
}

}  // namespace sparrow::server
