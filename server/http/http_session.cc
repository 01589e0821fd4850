#include "server/http/http_session.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "server/http/http_router.h"
#include "server/http/http_stream.h"
#include "server/http/http_util.h"
#include "server/http/proxy_preface.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

asio::awaitable<bool> Dispatch(HttpStream& stream, const HttpRequest& req, ServerContext& ctx,
                               const HttpServerOptions& opts, HttpServerState& state,
                               const std::string& remote_ip, RequestLog* log) {
  static const HttpRouter router = MakeSparrowRouter();
  const auto raw_target = req.target();
  const std::string_view target(raw_target.data(), raw_target.size());
  HttpExchange ex{stream,    req, target.substr(0, target.find('?')), ctx, opts, log, &state,
                  remote_ip, ""};
  co_return co_await router.Dispatch(ex);
}

// After refusing a request we did not read whole, drain a little so the client sees our
// answer instead of a connection reset. Under TLS too the raw bytes are read and dropped: the
// connection is over, nothing in them matters.
asio::awaitable<void> DrainAndClose(HttpStream& stream) {
  boost::system::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  std::vector<char> scratch(64 * 1024);
  size_t total = 0;
  while (!ec && total < (size_t{64} << 20)) {
    total += co_await stream.tcp().async_read_some(asio::buffer(scratch),
                                                   asio::redirect_error(asio::use_awaitable, ec));
  }
}

// The answer to a request that could not be read, or nothing (status 0) when there is no one
// to answer: the client closed, or the connection sat idle until the deadline.
struct ReadFailure {
  http::status status = http::status::unknown;
  std::string message, code;
};

ReadFailure ClassifyReadError(const boost::system::error_code& ec, bool got_some,
                              const HttpServerOptions& opts) {
  if (ec == http::error::body_limit) {
    return {http::status::payload_too_large,
            "The request body is larger than the limit of " + std::to_string(opts.max_body_bytes) +
                " bytes",
            "request_too_large"};
  }
  if (ec == http::error::header_limit) {
    return {http::status::request_header_fields_too_large,
            "The request line and headers are larger than the limit of " +
                std::to_string(opts.max_header_bytes) + " bytes",
            "headers_too_large"};
  }
  if (ec == beast::error::timeout) {
    if (!got_some) return {};  // an idle keep-alive connection: close quietly
    return {
        http::status::request_timeout,
        "The request did not arrive within " + std::to_string(opts.request_timeout.count()) + " ms",
        "request_timeout"};
  }
  // The client went away (before or in the middle of a request): nobody to answer.
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::operation_aborted ||
      &ec.category() != &make_error_code(http::error::bad_method).category()) {
    return {};
  }
  // The bytes are not HTTP/1.x: a bad request line, header, Content-Length or chunk.
  return {http::status::bad_request, "Malformed HTTP request: " + ec.message(), "bad_http"};
}

// Counts a request as being answered until it goes out of scope.
struct BusyRequest {
  explicit BusyRequest(HttpServerState& s) : state(s) { ++state.busy; }
  ~BusyRequest() { --state.busy; }
  HttpServerState& state;
};

// Answers of at least this many tokens give their freed heap back to the OS when done.
constexpr int64_t kLargeAnswerTokens = 256;

struct OpenConnection {
  explicit OpenConnection(Metrics& m) : metrics(m) { metrics.ConnectionOpened(); }
  ~OpenConnection() { metrics.ConnectionClosed(); }
  Metrics& metrics;
};

}  // namespace

asio::awaitable<void> RunHttpSession(asio::ip::tcp::socket socket, ServerContext& ctx,
                                     const HttpServerOptions& opts, HttpServerState& state,
                                     asio::ssl::context* tls) {
  OpenConnection open(ctx.metrics);
  std::string remote, remote_ip;
  {
    boost::system::error_code ec;
    auto ep = socket.remote_endpoint(ec);
    if (!ec) {
      remote_ip = ep.address().to_string();
      remote = JoinHostPort(remote_ip, ep.port());
    }
  }
  // Behind a trusted balancer: the client it relays (PROXY v2, before TLS), else per request
  // the one its X-Forwarded-For names. The failure lockout counts that client, not the balancer.
  const TrustedProxies* trusted = ctx.auth ? &ctx.auth->trusted_proxies() : nullptr;
  bool proxied = false;
  if (trusted != nullptr && !trusted->empty()) {
    const ProxyPreface pre =
        co_await ReadProxyPreface(socket, remote_ip, *trusted, opts.request_timeout);
    if (pre.closed) co_return;
    if (!pre.error.empty()) {
      spdlog::warn("http: closing the connection from {}: {}", remote, pre.error);
      co_return;
    }
    if (pre.from_header && pre.client_ip != remote_ip) {
      remote = pre.client_ip + " via " + remote;
      remote_ip = pre.client_ip;
    }
    proxied = pre.from_header;
  }
  HttpStream stream = tls ? HttpStream(std::move(socket), *tls) : HttpStream(std::move(socket));
  beast::flat_buffer buffer;
  if (const std::string why = co_await stream.Handshake(opts.request_timeout); !why.empty()) {
    // Scanners and clients that do not trust our certificate end here; not worth a warning each.
    ctx.metrics.TlsHandshakeFailed();
    spdlog::debug("https: TLS handshake with {} failed: {}", remote, why);
    co_return;
  }
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(opts.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(opts.max_header_bytes));
    // One deadline for the whole request, the keep-alive wait included: bytes trickled in
    // slowly cannot extend it. Our own timer rather than the stream's, which would close the
    // socket and leave no way to answer 408. All of this runs on the connection's strand, so
    // `armed` tells a late timer handler that the read (and maybe the session) is over.
    auto armed = std::make_shared<bool>(true);
    auto timed_out = std::make_shared<bool>(false);
    asio::steady_timer deadline(stream.get_executor(), opts.request_timeout);
    deadline.async_wait([armed, timed_out, &stream](const boost::system::error_code& e) {
      if (e || !*armed) return;
      *timed_out = true;
      boost::system::error_code ignored;
      stream.socket().cancel(ignored);
    });
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    *armed = false;
    deadline.cancel();
    if (ec) {
      if (*timed_out) ec = beast::error::timeout;
      const ReadFailure failure =
          ClassifyReadError(ec, parser.got_some() || buffer.size() > 0, opts);
      if (failure.status == http::status::unknown) break;
      BusyRequest busy(state);
      RequestLog log;
      log.remote = remote;
      HttpRequest head;
      if (parser.is_header_done()) {
        head = parser.release();
        log.method = std::string(head.method_string());
        log.target = std::string(head.target());
      }
      head.version(head.version() == 10 ? 10 : 11);
      head.keep_alive(false);
      co_await WriteResponse(stream,
                             ErrorResponse(head, failure.status, failure.message, "", failure.code),
                             &log, opts.write_timeout);
      ctx.metrics.RecordResponse("http", std::to_string(log.status));
      LogRequest(log, opts.json_logs);
      co_await DrainAndClose(stream);
      co_return;
    }
    BusyRequest busy(state);
    HttpRequest req = parser.release();
    RequestLog log;
    log.method = std::string(req.method_string());
    log.target = std::string(req.target());
    log.remote = remote;
    bool ok = false;
    std::string failure;
    if (state.draining) {
      // Shutting down: running requests finish, new ones are not queued.
      req.keep_alive(false);
      auto res = ErrorResponse(req, http::status::service_unavailable,
                               "the server is shutting down; retry on another instance or later",
                               "", "shutting_down");
      res.set(http::field::retry_after, "1");
      co_await WriteResponse(stream, std::move(res), &log, opts.write_timeout);
    } else {
      try {
        const auto xff = req["X-Forwarded-For"];
        const std::string client =
            proxied || trusted == nullptr || xff.empty()
                ? remote_ip
                : trusted->ClientOf(remote_ip, std::string_view(xff.data(), xff.size()));
        ok = co_await Dispatch(stream, req, ctx, opts, state, client, &log);
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    if (!failure.empty()) {
      // A bug, not the client's fault: answer if nothing was sent yet, log it, close.
      spdlog::error("http: {} {} failed: {}", log.method, log.target, failure);
      if (log.status == 0) {
        req.keep_alive(false);
        co_await WriteResponse(stream,
                               ErrorResponse(req, http::status::internal_server_error,
                                             "internal error while handling the request"),
                               &log, opts.write_timeout);
      }
      ok = false;
    }
    ctx.metrics.RecordResponse("http", std::to_string(log.status));
    LogRequest(log, opts.json_logs);
    if (!ok || log.completion_tokens >= kLargeAnswerTokens) {
      // A large answer (n choices of top logprobs build hundreds of MB of small blocks) or one
      // abandoned half way is freed by now; without a trim glibc keeps the pages (a slow reader
      // left RSS at 454 MB after its sockets were dropped).
      malloc_trim(0);
    }
    if (!ok || !req.keep_alive() || state.draining) break;
  }
  co_await stream.Shutdown();
}

}  // namespace sparrow::server
