#pragma once
// The PROXY protocol v2 header a trusted balancer sends first on a connection, read off the
// raw socket before TLS and HTTP (server/core/proxy_protocol.h parses it). Only a peer inside
// --trusted-proxy is read for one; for any other the bytes are left to the HTTP parser, which
// refuses them. Bounded: at most kProxyV2MaxBytes, within the request timeout.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <string>

#include "server/core/trusted_proxies.h"

namespace sparrow::server {

struct ProxyPreface {
  std::string client_ip;  // the relayed client, or the peer itself
  bool from_header = false;
  std::string error;    // non-empty: a malformed or cut header; close this connection
  bool closed = false;  // the peer sent nothing before it closed or the deadline: close quietly
};

// `peer_ip`: the socket's remote address. Consumes the header when there is one (its first byte
// tells: kProxyV2FirstByte starts no HTTP request and no TLS record) and nothing otherwise.
boost::asio::awaitable<ProxyPreface> ReadProxyPreface(boost::asio::ip::tcp::socket& socket,
                                                      const std::string& peer_ip,
                                                      const TrustedProxies& trusted,
                                                      std::chrono::milliseconds timeout);

}  // namespace sparrow::server
