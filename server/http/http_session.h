#pragma once
// One HTTP connection (plain, or TLS when `tls` is given): reads requests (enforcing the body
// limit), checks the API key, routes them and writes the answers, keeping the connection alive
// while the client wants to.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "server/core/server_context.h"
#include "server/http/http_server.h"

namespace sparrow::server {

boost::asio::awaitable<void> RunHttpSession(boost::asio::ip::tcp::socket socket, ServerContext& ctx,
                                            const HttpServerOptions& opts, HttpServerState& state,
                                            boost::asio::ssl::context* tls);

}  // namespace sparrow::server
