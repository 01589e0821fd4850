#pragma once
// The HTTPS server's TLS settings: TLS 1.2 and newer only, with the certificate chain and private
// key read from PEM files (`tls_cert`, `tls_key`). Loading checks that the key belongs to the
// certificate, so a mismatch stops the server at start with a message naming both files.
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "engine/common/result.h"

namespace sparrow::server {

Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(
    const std::string& cert_file, const std::string& key_file);

}  // namespace sparrow::server
