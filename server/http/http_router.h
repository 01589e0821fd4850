#pragma once
// HttpRouter: the table of HTTP routes. Each route has a method, a path (exact, or a prefix
// ending in '/'), an auth scope and a handler; the router answers 404 for an unknown path, 405
// (naming the allowed method) for a known path with another method, and 401 where the scope
// wants a key the request does not carry. New routes (the remote admin API) plug in with
// Add(); nothing else changes. Add() before serving; Dispatch is then thread-safe.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/auth.h"
#include "server/core/server_context.h"
#include "server/http/http_server.h"
#include "server/http/http_stream.h"
#include "server/http/http_util.h"

namespace sparrow::server {

// One request as a handler sees it.
struct HttpExchange {
  HttpStream& stream;
  const HttpRequest& req;
  std::string_view path;  // the target without its query
  ServerContext& ctx;
  const HttpServerOptions& opts;
  RequestLog* log;
  HttpServerState* state = nullptr;  // the server's drain flag and busy count
  std::string remote_ip;             // the client's address, without port
  std::string key_id;                // set by the router: the key the request passed with
};

// Returns whether the connection may be kept alive.
using HttpHandler = std::function<boost::asio::awaitable<bool>(HttpExchange&)>;

struct HttpRoute {
  http::verb method;
  std::string path;  // exact, or a prefix when it ends in '/' (then matching more after it)
  AuthScope scope;
  HttpHandler handler;
  bool exact = false;  // a path ending in '/' that means itself (a directory's index page)
};

class HttpRouter {
 public:
  void Add(HttpRoute route);

  // What a request resolves to: a route, or the error to answer with.
  struct Match {
    const HttpRoute* route = nullptr;
    http::status error = http::status::ok;  // 404 or 405 when route is null
    std::string allowed;                    // 405: the method the path takes
  };
  Match Find(http::verb method, std::string_view path) const;

  // Finds the route, checks its scope and runs it, or answers the error.
  boost::asio::awaitable<bool> Dispatch(HttpExchange& ex) const;

 private:
  std::vector<HttpRoute> routes_;
};

// The routes of sparrowd: /health, /metrics, /v1/models[/id], /v1/completions,
// /v1/chat/completions, /v1/embeddings, /v1/responses[/id] (responses_handler.h), Ollama's API
// under /api/ and at / (ollama_handler.h), and the admin API under /admin/v1/ (admin_routes.h).
HttpRouter MakeSparrowRouter();

}  // namespace sparrow::server
