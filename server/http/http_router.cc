#include "server/http/http_router.h"

#include "server/core/engine_facade.h"
#include "server/core/readiness.h"
#include "server/http/admin_routes.h"
#include "server/http/dashboard_routes.h"
#include "server/http/embeddings_handler.h"
#include "server/http/generation_handler.h"
#include "server/http/ollama_handler.h"
#include "server/http/rerank_handler.h"
#include "server/http/responses_handler.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

bool PathMatches(const HttpRoute& r, std::string_view path) {
  if (!r.exact && !r.path.empty() && r.path.back() == '/') {
    return path.size() > r.path.size() && path.starts_with(r.path);
  }
  return path == r.path;
}

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

// OpenAI's model object, with what models on demand add: "loaded" and "status" (loaded,
// sleeping, loading, available), and the loaded one's context length.
json ModelJson(const ModelEntry& m, const std::optional<EngineFacade>& loaded) {
  json j = {{"id", m.id},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "sparrow"},
            {"loaded", m.state == ModelState::kLoaded},
            {"status", ModelStateName(m.state)}};
  if (loaded && loaded->model_id() == m.id) j["context_length"] = loaded->n_ctx();
  return j;
}

// (JSON bodies are built before co_await: GCC 12 cannot compile a braced list inside one.)
// Draining answers 503 so that a load balancer or supervisor stops sending new work.
asio::awaitable<bool> Health(HttpExchange& ex) {
  const bool draining = ex.ctx.draining.load();
  const json body = {{"status", draining ? "draining" : "ok"}, {"model", ex.ctx.model_id()}};
  co_return co_await Reply(
      ex,
      JsonResponse(ex.req, draining ? http::status::service_unavailable : http::status::ok, body));
}

// Whether a request sent now would be admitted: what a balancer's health check asks.
asio::awaitable<bool> Ready(HttpExchange& ex) {
  const Readiness r = ReadinessOf(ex.ctx);
  json body = {{"ready", r.ready}, {"model", ex.ctx.model_id()}};
  if (!r.ready) {
    body["reason"] = r.reason;
    body["detail"] = r.detail;
  }
  HttpResponse res =
      JsonResponse(ex.req, r.ready ? http::status::ok : http::status::service_unavailable, body);
  if (!r.ready) res.set(http::field::retry_after, "1");
  co_return co_await Reply(ex, std::move(res));
}

asio::awaitable<bool> MetricsPage(HttpExchange& ex) {
  HttpResponse res(http::status::ok, ex.req.version());
  res.set(http::field::content_type, "text/plain; version=0.0.4");
  res.keep_alive(ex.req.keep_alive());
  // A sleeping model is not woken for a scrape: its counters are zero until it serves again.
  const std::optional<EngineFacade> loaded = ex.ctx.LoadedEngine();
  const EngineStats stats = loaded ? loaded->Stats() : EngineStats{};
  res.body() = ex.ctx.metrics.Render(stats.scheduler, stats.memory ? &*stats.memory : nullptr);
  res.prepare_payload();
  co_return co_await Reply(ex, std::move(res));
}

asio::awaitable<bool> ListModels(HttpExchange& ex) {
  const std::optional<EngineFacade> loaded = ex.ctx.LoadedEngine();
  json data = json::array();
  for (const ModelEntry& m : ex.ctx.ListModels()) data.push_back(ModelJson(m, loaded));
  const json body = {{"object", "list"}, {"data", std::move(data)}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> GetModel(HttpExchange& ex) {
  const std::string_view id = ex.path.substr(std::string_view("/v1/models/").size());
  const std::optional<EngineFacade> loaded = ex.ctx.LoadedEngine();
  for (const ModelEntry& m : ex.ctx.ListModels()) {
    if (m.id != id) continue;
    const json body = ModelJson(m, loaded);
    co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
  }
  co_return co_await Reply(ex, ErrorResponse(ex.req, http::status::not_found,
                                             "The model '" + std::string(id) + "' does not exist",
                                             "model", "model_not_found"));
}

HttpHandler Generation(bool chat) {
  return [chat](HttpExchange& ex) -> asio::awaitable<bool> {
    GenerationLimits limits;
    limits.max_pending_chunks = ex.opts.max_pending_chunks;
    limits.max_buffered_bytes = ex.opts.max_buffered_bytes;
    limits.write_timeout = ex.opts.write_timeout;
    co_return co_await HandleGeneration(ex, chat, limits);
  };
}

}  // namespace

void HttpRouter::Add(HttpRoute route) {
  routes_.push_back(std::move(route));
}

HttpRouter::Match HttpRouter::Find(http::verb method, std::string_view path) const {
  Match m;
  m.error = http::status::not_found;
  for (const HttpRoute& r : routes_) {
    if (!PathMatches(r, path)) continue;
    if (r.method == method) {
      m.route = &r;
      m.error = http::status::ok;
      return m;
    }
    m.error = http::status::method_not_allowed;
    m.allowed = std::string(http::to_string(r.method));
  }
  return m;
}

asio::awaitable<bool> HttpRouter::Dispatch(HttpExchange& ex) const {
  const Match m = Find(ex.req.method(), ex.path);
  // Unknown paths and methods need a key too, so probing them reveals nothing; under
  // /admin/ the admin key, so that the admin API's shape is not visible to inference keys.
  const AuthScope scope = m.route                          ? m.route->scope
                          : ex.path.starts_with("/admin/") ? AuthScope::kAdmin
                                                           : AuthScope::kApiKey;
  if (scope != AuthScope::kOpen && ex.ctx.auth) {
    const auto auth = ex.req[http::field::authorization];
    const AuthDecision d =
        ex.ctx.auth->Check(scope, std::string_view(auth.data(), auth.size()), ex.remote_ip,
                           std::string(ex.req.method_string()) + " " + std::string(ex.path));
    if (!d.allowed()) {
      using O = AuthDecision::Outcome;
      const http::status status = d.outcome == O::kLockedOut ? http::status::too_many_requests
                                  : d.outcome == O::kWrongScope || d.outcome == O::kAdminDisabled ||
                                          d.outcome == O::kHostDisabled
                                      ? http::status::forbidden
                                      : http::status::unauthorized;
      auto res = ErrorResponse(ex.req, status, d.message, "", d.code());
      if (status == http::status::unauthorized) res.set(http::field::www_authenticate, "Bearer");
      if (d.outcome == O::kWrongScope) {
        res.set(http::field::www_authenticate, "Bearer error=\"insufficient_scope\"");
      }
      if (d.outcome == O::kLockedOut) {
        res.set(http::field::retry_after, std::to_string(d.retry_after_s));
      }
      co_return co_await Reply(ex, std::move(res));
    }
    ex.key_id = d.key_id;
  }
  if (m.error == http::status::method_not_allowed) {
    auto res = ErrorResponse(ex.req, http::status::method_not_allowed,
                             "use " + m.allowed + " " + std::string(ex.path));
    res.set(http::field::allow, m.allowed);
    co_return co_await Reply(ex, std::move(res));
  }
  if (m.route == nullptr) {
    co_return co_await Reply(
        ex, ErrorResponse(
                ex.req, http::status::not_found,
                "Unknown route " + std::string(ex.req.method_string()) + " " + std::string(ex.path),
                "", "unknown_route"));
  }
  co_return co_await m.route->handler(ex);
}

HttpRouter MakeSparrowRouter() {
  HttpRouter r;
  r.Add({http::verb::get, "/health", AuthScope::kOpen, Health});
  r.Add({http::verb::get, "/ready", AuthScope::kOpen, Ready});
  r.Add({http::verb::get, "/metrics", AuthScope::kMetrics, MetricsPage});
  r.Add({http::verb::get, "/v1/models", AuthScope::kApiKey, ListModels});
  r.Add({http::verb::get, "/v1/models/", AuthScope::kApiKey, GetModel});
  r.Add({http::verb::post, "/v1/completions", AuthScope::kApiKey, Generation(false)});
  r.Add({http::verb::post, "/v1/chat/completions", AuthScope::kApiKey, Generation(true)});
  r.Add({http::verb::post, "/v1/embeddings", AuthScope::kApiKey, HandleEmbeddings});
  // llama-server's four names for one endpoint.
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"}) {
    r.Add({http::verb::post, path, AuthScope::kApiKey, HandleRerank});
  }
  AddResponsesRoutes(r);
  AddOllamaRoutes(r);
  AddAdminRoutes(r);
  AddDashboardRoutes(r);
  return r;
}

}  // namespace sparrow::server
