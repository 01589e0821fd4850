#include "server/http/http_util.h"

#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/chunk_encode.hpp>

#include "api/openai/openai_types.h"

namespace sparrow::server {

void LogRequest(const RequestLog& l, bool json_format) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - l.start).count();
  if (json_format) {
    nlohmann::json j = {{"event", "http_request"},
                        {"method", l.method},
                        {"target", l.target},
                        {"status", l.status},
                        {"remote", l.remote},
                        {"duration_ms", ms},
                        {"stream", l.stream},
                        {"model", l.model},
                        {"prompt_tokens", l.prompt_tokens},
                        {"completion_tokens", l.completion_tokens},
                        {"cached_tokens", l.cached_tokens},
                        {"ttft_ms", l.ttft_ms},
                        {"finish_reason", l.finish_reason}};
    spdlog::info("{}", openai::Dump(j));
    return;
  }
  spdlog::info(
      "{} {} {} {:.1f}ms remote={} stream={} prompt_tokens={} cached_tokens={} "
      "completion_tokens={} ttft={:.1f}ms finish={}",
      l.method, l.target, l.status, ms, l.remote, l.stream, l.prompt_tokens, l.cached_tokens,
      l.completion_tokens, l.ttft_ms, l.finish_reason.empty() ? "-" : l.finish_reason);
}

HttpResponse JsonResponse(const HttpRequest& req, http::status status, const nlohmann::json& body) {
  return JsonTextResponse(req, status, openai::Dump(body));
}

HttpResponse JsonTextResponse(const HttpRequest& req, http::status status, std::string body) {
  HttpResponse res(status, req.version());
  res.set(http::field::content_type, "application/json");
  res.set(http::field::server, "sparrowd");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

HttpResponse ErrorResponse(const HttpRequest& req, http::status status, const std::string& message,
                           const std::string& param, const std::string& code) {
  std::string type = "invalid_request_error";
  const unsigned s = static_cast<unsigned>(status);
  if (s == 401) type = "authentication_error";
  if (s == 403) type = "permission_error";
  if (s == 404 && code.empty()) type = "not_found_error";
  if (s == 429) type = "rate_limit_error";
  if (s >= 500) type = "server_error";
  return JsonResponse(req, status, openai::ErrorBody(message, type, param, code));
}

boost::asio::awaitable<bool> WriteResponse(HttpStream& stream, HttpResponse res, RequestLog* log,
                                           std::chrono::milliseconds timeout) {
  if (log) log->status = static_cast<int>(res.result_int());
  boost::system::error_code ec;
  stream.expires_after(timeout);
  co_await http::async_write(stream, res,
                             boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  stream.expires_never();
  co_return !ec;
}

boost::asio::awaitable<bool> StartEventStream(HttpStream& stream, const HttpRequest& req,
                                              const std::string& request_id, RequestLog* log,
                                              std::chrono::milliseconds timeout,
                                              const char* content_type) {
  const bool chunked = req.version() >= 11;
  http::response<http::empty_body> res(http::status::ok, req.version());
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-cache");
  res.set(http::field::server, "sparrowd");
  if (!request_id.empty()) res.set("X-Request-Id", request_id);
  res.keep_alive(chunked && req.keep_alive());
  res.chunked(chunked);
  if (log) log->status = 200;
  http::response_serializer<http::empty_body> sr(res);
  boost::system::error_code ec;
  stream.expires_after(timeout);
  co_await http::async_write_header(stream, sr,
                                    boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  stream.expires_never();
  co_return !ec;
}

boost::asio::awaitable<bool> WriteEventBytes(HttpStream& stream, const std::string& bytes,
                                             bool chunked, std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  stream.expires_after(timeout);
  if (chunked) {
    co_await boost::asio::async_write(stream, http::make_chunk(boost::asio::buffer(bytes)),
                                      boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  } else {
    co_await boost::asio::async_write(stream, boost::asio::buffer(bytes),
                                      boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  stream.expires_never();
  co_return !ec;
}

boost::asio::awaitable<bool> EndChunkedBody(HttpStream& stream, std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  stream.expires_after(timeout);
  co_await boost::asio::async_write(stream, http::make_chunk_last(),
                                    boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  stream.expires_never();
  co_return !ec;
}

}  // namespace sparrow::server
