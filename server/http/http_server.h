#pragma once
// HttpServer: the OpenAI-compatible REST API plus /health and /metrics over HTTP/1.1 with
// keep-alive (Boost.Beast on Asio), served by a few io threads. Each connection is one
// coroutine on its own strand; generation goes through the scheduler only.
// Limits (server/README.md, "Limits"): request size and time, open connections, a write
// timeout and a cap on undelivered stream output per connection.
// Shutdown: BeginShutdown() (no new connections; requests on open ones get 503), then the
// scheduler's drain, then WaitForResponses() so every answer is flushed, then Stop().
// Thread-safe: every public method may be called from any thread. Shut the scheduler down
// (or let it go idle) before Stop(), since sinks wake connection coroutines.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
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
  size_t max_header_bytes = 16 << 10;
  size_t max_connections = 256;
  std::chrono::milliseconds request_timeout{60000};  // whole request, keep-alive wait included
  std::chrono::milliseconds write_timeout{30000};
  size_t max_buffered_bytes = 4 << 20;  // undelivered stream output per connection
  size_t max_pending_chunks = 1024;
  bool json_logs = false;
  // HTTPS when both are set: PEM certificate chain and private key (TLS 1.2+).
  std::string tls_cert, tls_key;
};

// What the server and its connections share while it runs.
struct HttpServerState {
  std::atomic<bool> draining{false};  // shutting down: answer 503, keep no connection alive
  std::atomic<int64_t> busy{0};       // requests read and not yet completely answered
  // Prepares generation requests (parsing, the chat template, tokenizing) off the io threads: a
  // chat template may run up to its step limit, over a second on a slow core
  // (engine/jinja/README.md). As many threads as io threads. Null: on the io thread.
  std::unique_ptr<boost::asio::thread_pool> prepare;
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
  // Stops accepting; requests that arrive on open connections from now on get 503 and every
  // connection closes after its current response.
  void BeginShutdown();
  // Waits until no request is being answered (every response written), at most `timeout`.
  // True when all were.
  bool WaitForResponses(std::chrono::milliseconds timeout);
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
  HttpServerState state_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // null: plain HTTP
  std::atomic<bool> stopped_{false};
};

}  // namespace sparrow::server
