#include "server/http/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http/http_session.h"
#include "server/http/http_util.h"
#include "server/http/tls_context.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// Over the connection cap: a short 503 (the client learns why), then close.
asio::awaitable<void> Refuse(tcp::socket socket, size_t max_connections) {
  HttpStream stream(std::move(socket));
  HttpRequest head;
  head.version(11);
  head.keep_alive(false);
  auto res = ErrorResponse(head, http::status::service_unavailable,
                           "the server has " + std::to_string(max_connections) +
                               " connections open (max_connections); retry later",
                           "", "too_many_connections");
  res.set(http::field::retry_after, "1");
  co_await WriteResponse(stream, std::move(res), nullptr, std::chrono::seconds(1));
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

asio::awaitable<void> AcceptLoop(tcp::acceptor& acceptor, ServerContext& ctx,
                                 const HttpServerOptions& opts, HttpServerState& state,
                                 asio::ssl::context* tls) {
  asio::steady_timer backoff(acceptor.get_executor());
  auto last_report = std::chrono::steady_clock::time_point{};
  int64_t unreported = 0;
  for (;;) {
    boost::system::error_code ec;
    // Each connection gets its own strand so its coroutine and its wake-ups never race.
    tcp::socket socket(asio::make_strand(acceptor.get_executor()));
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors the pending connection stays queued and accept fails again at once:
      // wait before retrying and report once per interval, or the loop spins and floods the log.
      const bool no_fds = ec == asio::error::no_descriptors ||
                          ec == boost::system::errc::too_many_files_open_in_system;
      if (no_fds) ctx.metrics.AcceptFailedForFds();
      ++unreported;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report >= std::chrono::seconds(10)) {
        spdlog::warn("http: accept failed: {} ({} times since the last report); retrying",
                     ec.message(), unreported);
        last_report = now;
        unreported = 0;
      }
      backoff.expires_after(std::chrono::milliseconds(no_fds ? 100 : 10));
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    auto ex = socket.get_executor();
    if (static_cast<size_t>(ctx.metrics.connections_open()) >= opts.max_connections) {
      ctx.metrics.ConnectionRefused();
      // A TLS client could not read a plain answer, and a handshake is work we are refusing.
      if (tls != nullptr) continue;  // the socket closes here
      asio::co_spawn(ex, Refuse(std::move(socket), opts.max_connections), asio::detached);
      continue;
    }
    asio::co_spawn(ex, RunHttpSession(std::move(socket), ctx, opts, state, tls), asio::detached);
  }
}

}  // namespace

HttpServerOptions HttpOptionsFromConfig(const ServerConfig& c) {
  HttpServerOptions o;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.threads = static_cast<int>(c.http_threads);
  o.max_body_bytes = static_cast<size_t>(c.max_body_bytes);
  o.max_header_bytes = static_cast<size_t>(c.max_header_bytes);
  o.max_connections = static_cast<size_t>(c.max_connections);
  o.request_timeout = std::chrono::milliseconds(c.request_timeout_ms);
  o.write_timeout = std::chrono::milliseconds(c.write_timeout_ms);
  o.max_buffered_bytes = static_cast<size_t>(c.max_buffered_bytes);
  o.json_logs = c.log_format == "json";
  o.tls_cert = c.tls_cert;
  o.tls_key = c.tls_key;
  return o;
}

HttpServer::HttpServer(ServerContext& ctx, HttpServerOptions options)
    : ctx_(ctx), opts_(std::move(options)), ioc_(opts_.threads), acceptor_(ioc_) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ServerContext& ctx,
                                                      HttpServerOptions options) {
  std::unique_ptr<HttpServer> s(new HttpServer(ctx, std::move(options)));
  if (!s->opts_.tls_cert.empty() || !s->opts_.tls_key.empty()) {
    auto tls = MakeServerTlsContext(s->opts_.tls_cert, s->opts_.tls_key);
    if (!tls.ok()) return tls.status();
    s->tls_ = std::move(*tls);
  }
  const std::string where = s->opts_.host + ":" + std::to_string(s->opts_.port);
  boost::system::error_code ec;
  auto addr =
      asio::ip::make_address(s->opts_.host == "localhost" ? "127.0.0.1" : s->opts_.host, ec);
  if (ec) return InvalidArgument("http: '" + s->opts_.host + "' is not an IP address");
  tcp::endpoint ep(addr, s->opts_.port);
  s->acceptor_.open(ep.protocol(), ec);
  if (!ec) s->acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s->acceptor_.bind(ep, ec);
  if (!ec) s->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return IoError("http: cannot listen on " + where + ": " + ec.message());
  s->port_ = s->acceptor_.local_endpoint().port();
  asio::co_spawn(s->ioc_, AcceptLoop(s->acceptor_, s->ctx_, s->opts_, s->state_, s->tls_.get()),
                 asio::detached);
  s->state_.prepare =
      std::make_unique<asio::thread_pool>(static_cast<size_t>(std::max(1, s->opts_.threads)));
  for (int i = 0; i < std::max(1, s->opts_.threads); ++i) {
    s->threads_.emplace_back([io = &s->ioc_] { io->run(); });
  }
  return s;
}

HttpServer::~HttpServer() {
  Stop();
}

void HttpServer::StopAccepting() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

void HttpServer::BeginShutdown() {
  state_.draining = true;
  StopAccepting();
}

bool HttpServer::WaitForResponses(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (state_.busy.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  StopAccepting();
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Before the io_context goes: a preparation that ends wakes its coroutine through it.
  if (state_.prepare) {
    state_.prepare->stop();
    state_.prepare->join();
  }
}

}  // namespace sparrow::server
