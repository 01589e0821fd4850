#include "server/http/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http/http_session.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

asio::awaitable<void> AcceptLoop(tcp::acceptor& acceptor, ServerContext& ctx,
                                 const HttpServerOptions& opts) {
  for (;;) {
    boost::system::error_code ec;
    // Each connection gets its own strand so its coroutine and its wake-ups never race.
    tcp::socket socket(asio::make_strand(acceptor.get_executor()));
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      spdlog::warn("http: accept failed: {}", ec.message());
      continue;
    }
    auto ex = socket.get_executor();
    asio::co_spawn(ex, RunHttpSession(std::move(socket), ctx, opts), asio::detached);
  }
}

}  // namespace

HttpServerOptions HttpOptionsFromConfig(const ServerConfig& c) {
  HttpServerOptions o;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.threads = static_cast<int>(c.http_threads);
  o.max_body_bytes = static_cast<size_t>(c.max_body_bytes);
  o.api_key = c.api_key;
  o.json_logs = c.log_format == "json";
  return o;
}

HttpServer::HttpServer(ServerContext& ctx, HttpServerOptions options)
    : ctx_(ctx), opts_(std::move(options)), ioc_(opts_.threads), acceptor_(ioc_) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ServerContext& ctx,
                                                      HttpServerOptions options) {
  std::unique_ptr<HttpServer> s(new HttpServer(ctx, std::move(options)));
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
  asio::co_spawn(s->ioc_, AcceptLoop(s->acceptor_, s->ctx_, s->opts_), asio::detached);
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

void HttpServer::Stop() {
  if (stopped_.exchange(true)) return;
  StopAccepting();
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace sparrow::server
