#include "server/http/http_session.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "api/openai/openai_types.h"
#include "server/core/api_key.h"
#include "server/http/generation_handler.h"
#include "server/http/http_util.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using json = nlohmann::json;
constexpr auto kIdleTimeout = std::chrono::seconds(120);

json ModelJson(const ServerContext& ctx) {
  return json{{"id", ctx.model_id},
              {"object", "model"},
              {"created", 0},
              {"owned_by", "sparrow"},
              {"context_length", ctx.n_ctx}};
}

// Answers everything that is not a generation. Returns nullopt for the generation routes.
std::optional<HttpResponse> SimpleRoute(const HttpRequest& req, std::string_view path,
                                        ServerContext& ctx) {
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  if (path == "/health") {
    if (!get) return ErrorResponse(req, http::status::method_not_allowed, "use GET /health");
    return JsonResponse(req, http::status::ok, {{"status", "ok"}, {"model", ctx.model_id}});
  }
  if (path == "/metrics") {
    if (!get) return ErrorResponse(req, http::status::method_not_allowed, "use GET /metrics");
    HttpResponse res(http::status::ok, req.version());
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.keep_alive(req.keep_alive());
    res.body() = ctx.metrics.Render(ctx.scheduler->Stats());
    res.prepare_payload();
    return res;
  }
  if (path == "/v1/models") {
    if (!get) return ErrorResponse(req, http::status::method_not_allowed, "use GET /v1/models");
    return JsonResponse(req, http::status::ok,
                        {{"object", "list"}, {"data", json::array({ModelJson(ctx)})}});
  }
  if (path.starts_with("/v1/models/")) {
    const std::string_view id = path.substr(std::string_view("/v1/models/").size());
    if (id != ctx.model_id) {
      return ErrorResponse(req, http::status::not_found,
                           "The model '" + std::string(id) + "' does not exist", "model",
                           "model_not_found");
    }
    return JsonResponse(req, http::status::ok, ModelJson(ctx));
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) {
      return ErrorResponse(req, http::status::method_not_allowed, "use POST " + std::string(path));
    }
    return std::nullopt;
  }
  return ErrorResponse(
      req, http::status::not_found,
      "Unknown route " + std::string(req.method_string()) + " " + std::string(path), "",
      "unknown_route");
}

asio::awaitable<bool> Dispatch(beast::tcp_stream& stream, const HttpRequest& req,
                               ServerContext& ctx, const HttpServerOptions& opts, RequestLog* log) {
  const auto raw_target = req.target();
  std::string_view target(raw_target.data(), raw_target.size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (!opts.api_key.empty() && path != "/health") {
    const auto auth = req[http::field::authorization];
    if (!BearerKeyMatches(std::string_view(auth.data(), auth.size()), opts.api_key)) {
      auto res = ErrorResponse(req, http::status::unauthorized,
                               "Missing or incorrect API key: send 'Authorization: Bearer <key>'",
                               "", "invalid_api_key");
      res.set(http::field::www_authenticate, "Bearer");
      co_return co_await WriteResponse(stream, std::move(res), log);
    }
  }
  if (auto res = SimpleRoute(req, path, ctx)) {
    co_return co_await WriteResponse(stream, std::move(*res), log);
  }
  GenerationLimits limits;
  limits.max_pending_chunks = opts.max_pending_chunks;
  co_return co_await HandleGeneration(stream, req, path == "/v1/chat/completions", ctx, limits,
                                      log);
}

// After refusing a body we did not read, drain a little so the client sees our answer
// instead of a connection reset.
asio::awaitable<void> DrainAndClose(beast::tcp_stream& stream) {
  boost::system::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  std::vector<char> scratch(64 * 1024);
  size_t total = 0;
  while (!ec && total < (size_t{64} << 20)) {
    total += co_await stream.async_read_some(asio::buffer(scratch),
                                             asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace

asio::awaitable<void> RunHttpSession(asio::ip::tcp::socket socket, ServerContext& ctx,
                                     const HttpServerOptions& opts) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  std::string remote;
  {
    boost::system::error_code ec;
    auto ep = stream.socket().remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(opts.max_body_bytes);
    stream.expires_after(kIdleTimeout);
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::body_limit) {
      RequestLog log;
      log.method = std::string(parser.get().method_string());
      log.target = std::string(parser.get().target());
      log.remote = remote;
      HttpRequest head = parser.release();
      head.keep_alive(false);
      co_await WriteResponse(stream,
                             ErrorResponse(head, http::status::payload_too_large,
                                           "The request body is larger than the limit of " +
                                               std::to_string(opts.max_body_bytes) + " bytes",
                                           "", "request_too_large"),
                             &log);
      ctx.metrics.RecordResponse("http", std::to_string(log.status));
      LogRequest(log, opts.json_logs);
      co_await DrainAndClose(stream);
      co_return;
    }
    if (ec) break;  // closed, timed out or malformed: nothing useful to answer
    stream.expires_never();
    HttpRequest req = parser.release();
    RequestLog log;
    log.method = std::string(req.method_string());
    log.target = std::string(req.target());
    log.remote = remote;
    const bool ok = co_await Dispatch(stream, req, ctx, opts, &log);
    ctx.metrics.RecordResponse("http", std::to_string(log.status));
    LogRequest(log, opts.json_logs);
    if (!ok || !req.keep_alive()) break;
  }
  boost::system::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
}

}  // namespace sparrow::server
