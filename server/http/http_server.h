#pragma once
// HttpServer: the OpenAI-compatible REST API plus /health and /metrics over HTTP/1.1 with
// keep-alive (Boost.Beast on Asio), served by a few io threads. Each connection is one
// coroutine on its own strand; generation goes through the scheduler only.
// Thread-safe: StopAccepting/Stop may be called from any thread. Shut the scheduler down
// (or let it go idle) before Stop(), since sinks wake connection coroutines.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/common/result.h"
#include "server/core/server_context.h"

namespace sparrow::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: a free port, see HttpServer::port()
  int threads = 2;
  size_t max_body_bytes = 1 << 20;
  std::string api_key;  // "" -> no authentication
  size_t max_pending_chunks = 1024;
  bool json_logs = false;
};

HttpServerOptions HttpOptionsFromConfig(const ServerConfig& config);

class HttpServer {
 public:
  // Binds and starts serving. InvalidArgument/IoError naming the address when it cannot bind.
  static Result<std::unique_ptr<HttpServer>> Start(ServerContext& ctx, HttpServerOptions options);
  ~HttpServer();

  uint16_t port() const { return port_; }
  // Closes the listening socket; open connections carry on.
  void StopAccepting();
  // Stops accepting, stops the io threads and drops every connection.
  void Stop();

 private:
  HttpServer(ServerContext& ctx, HttpServerOptions options);

  ServerContext& ctx_;
  HttpServerOptions opts_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
};

}  // namespace sparrow::server
