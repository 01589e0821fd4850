#include "server/http/dashboard_routes.h"

#include "server/dashboard/dashboard_assets.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

asio::awaitable<bool> Redirect(HttpExchange& ex) {
  HttpResponse res(http::status::moved_permanently, ex.req.version());
  res.set(http::field::location, "/dashboard/");
  res.keep_alive(ex.req.keep_alive());
  res.prepare_payload();
  co_return co_await Reply(ex, std::move(res));
}

asio::awaitable<bool> Serve(HttpExchange& ex) {
  std::string_view name = ex.path.substr(std::string_view("/dashboard/").size());
  if (name.empty()) name = "index.html";
  const DashboardAsset* a = FindDashboardAsset(name);
  if (a == nullptr) {
    co_return co_await Reply(
        ex, ErrorResponse(ex.req, http::status::not_found,
                          "no dashboard file '" + std::string(name) + "'", "", "unknown_route"));
  }
  HttpResponse res(http::status::ok, ex.req.version());
  res.set(http::field::content_type, a->content_type);
  // The page runs only its own files and talks only to this server; nobody may frame it (the
  // buttons act with the operator's key).
  res.set("Content-Security-Policy",
          "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.set(http::field::cache_control, "no-cache");
  res.keep_alive(ex.req.keep_alive());
  res.body().assign(reinterpret_cast<const char*>(a->data), a->size);
  res.prepare_payload();
  co_return co_await Reply(ex, std::move(res));
}

}  // namespace

void AddDashboardRoutes(HttpRouter& r) {
  r.Add({http::verb::get, "/dashboard", AuthScope::kOpen, Redirect});
  r.Add({http::verb::get, "/dashboard/", AuthScope::kOpen, Serve, /*exact=*/true});
  r.Add({http::verb::get, "/dashboard/", AuthScope::kOpen, Serve});
}

}  // namespace sparrow::server
