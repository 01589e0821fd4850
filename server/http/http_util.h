#pragma once
// Small helpers shared by the HTTP routes: the request/response types, JSON and error
// responses in the OpenAI shape, and the per-request log line. Stateless, thread-safe.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "server/http/http_stream.h"

namespace sparrow::server {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

// What the request log line reports; routes fill in what they know.
struct RequestLog {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string method, target, remote, model, finish_reason;
  int status = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double ttft_ms = 0;
  bool stream = false;
};

// One spdlog line, text or JSON.
void LogRequest(const RequestLog& log, bool json_format);

HttpResponse JsonResponse(const HttpRequest& req, http::status status, const nlohmann::json& body);
// The same for a body already written as JSON text (moved in, not copied).
HttpResponse JsonTextResponse(const HttpRequest& req, http::status status, std::string body);
// An OpenAI-style error body. `type` defaults from the status (invalid_request_error, ...).
HttpResponse ErrorResponse(const HttpRequest& req, http::status status, const std::string& message,
                           const std::string& param = "", const std::string& code = "");

// Writes `res` and records its status in `log`; false if the connection broke or the client
// read nothing for `timeout` (a reader that stalls must not hold the body in memory for ever).
boost::asio::awaitable<bool> WriteResponse(HttpStream& stream, HttpResponse res, RequestLog* log,
                                           std::chrono::milliseconds timeout);

// Server-sent events. StartEventStream writes the head of a text/event-stream response:
// chunked on HTTP/1.1; on HTTP/1.0 (no chunked encoding) the body ends when the connection
// closes. `request_id` ("" for none) goes out as X-Request-Id. False if the client is gone.
// Other streams of lines (Ollama's NDJSON) name their own `content_type`.
boost::asio::awaitable<bool> StartEventStream(HttpStream& stream, const HttpRequest& req,
                                              const std::string& request_id, RequestLog* log,
                                              std::chrono::milliseconds timeout,
                                              const char* content_type = "text/event-stream");
// Writes `bytes` (whole events) as one chunk, or as they are on HTTP/1.0. False when the client
// is gone or read nothing for `timeout`.
boost::asio::awaitable<bool> WriteEventBytes(HttpStream& stream, const std::string& bytes,
                                             bool chunked, std::chrono::milliseconds timeout);
// Ends a chunked body (the last, empty chunk).
boost::asio::awaitable<bool> EndChunkedBody(HttpStream& stream, std::chrono::milliseconds timeout);

}  // namespace sparrow::server
