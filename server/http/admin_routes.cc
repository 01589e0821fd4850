#include "server/http/admin_routes.h"

#include <atomic>
#include <boost/asio/this_coro.hpp>
#include <optional>

#include "api/openai/json_limits.h"
#include "server/admin/admin_controller.h"
#include "server/http/admin_json.h"
#include "server/http/http_status.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
// A comment line this often keeps proxies from closing an idle stream and finds dead clients.
constexpr auto kKeepAlive = std::chrono::seconds(15);

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

AdminCaller Caller(const HttpExchange& ex) {
  return {"http", ex.log ? ex.log->remote : ex.remote_ip, ex.key_id};
}

// The controller, or null after answering 503 (a server built without the admin API).
AdminController* Controller(HttpExchange& ex) {
  return ex.ctx.admin.get();
}

HttpResponse NotServing(const HttpExchange& ex) {
  return ErrorResponse(ex.req, http::status::service_unavailable,
                       "this server does not run the admin API", "", "admin_unavailable");
}

HttpResponse StatusError(const HttpExchange& ex, const Status& s, const std::string& param = "") {
  return ErrorResponse(ex.req, HttpStatusFor(s.code()), s.message(), param);
}

// A query parameter's value ("" when absent): "prompt" in "/admin/v1/requests?prompt=1".
std::string QueryParam(const HttpRequest& req, std::string_view name) {
  const std::string_view target(req.target().data(), req.target().size());
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == std::string_view::npos ? "1" : std::string(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return "";
}

// An admin body as JSON, or a discarded value when it is not JSON or nests too deep (each route
// then answers with the shape it expects).
json BodyJson(const HttpRequest& req) {
  Result<json> in = openai::ParseBoundedJson(req.body(), "");
  return in.ok() ? std::move(in).value() : json(json::value_t::discarded);
}

asio::awaitable<bool> GetStatus(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const json body = AdminJson(admin->Snapshot());
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> ListRequests(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const std::string p = QueryParam(ex.req, "prompt");
  const bool with_prompt = p == "1" || p == "true";
  json body = AdminJson(with_prompt ? admin->RequestsWithPrompts(Caller(ex)) : admin->Requests());
  body["object"] = "list";
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> CancelRequest(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const std::string id(ex.path.substr(std::string_view("/admin/v1/requests/").size()));
  const Status s = admin->Cancel(Caller(ex), id);
  if (!s.ok()) co_return co_await Reply(ex, StatusError(ex, s, "id"));
  const json body = {{"id", id}, {"cancelled", true}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> Drain(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  (void)admin->Drain(Caller(ex));
  const json body = AdminJson(admin->DrainState());
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> Resume(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  (void)admin->Resume(Caller(ex));
  const json body = AdminJson(admin->DrainState());
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> SetLogLevel(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const json in = BodyJson(ex.req);
  if (!in.is_object() || !in.contains("level") || !in["level"].is_string()) {
    const std::string why = "the body must be a JSON object {\"level\": \"info\"}";
    admin->RecordRefused(Caller(ex), "log_level", why);
    co_return co_await Reply(
        ex, ErrorResponse(ex.req, http::status::bad_request, why, "level", "invalid_body"));
  }
  const std::string level = in["level"].get<std::string>();
  const Status s = admin->SetLogLevel(Caller(ex), level);
  if (!s.ok()) co_return co_await Reply(ex, StatusError(ex, s, "level"));
  const json body = {{"level", level}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

// The memory answer after an action: the budget as it stands now.
asio::awaitable<bool> ReplyMemory(HttpExchange& ex, AdminController& admin) {
  const Result<adminpb::MemoryBudget> m = admin.Memory();
  if (!m.ok()) co_return co_await Reply(ex, StatusError(ex, m.status()));
  const json body = AdminJson(*m);
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

// GET /admin/v1/shards: which device computes which layers, and each worker link's counters.
asio::awaitable<bool> GetShards(HttpExchange& ex) {
  const json body = AdminJson(DescribeShards(ex.ctx));
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

// GET /admin/v1/memory: the budget, its plan, the pressure level and the cache's occupancy.
asio::awaitable<bool> GetMemory(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  co_return co_await ReplyMemory(ex, *admin);
}

// PUT /admin/v1/memory/budget {"bytes": N}: the operator's budget for the neuron cache.
asio::awaitable<bool> PutMemoryBudget(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const json in = BodyJson(ex.req);
  if (!in.is_object() || !in.contains("bytes") || !in["bytes"].is_number_unsigned()) {
    const std::string why = "the body must be a JSON object {\"bytes\": N}, N a whole number >= 0";
    admin->RecordRefused(Caller(ex), "memory_budget_set", why);
    co_return co_await Reply(
        ex, ErrorResponse(ex.req, http::status::bad_request, why, "bytes", "invalid_body"));
  }
  const Status s = admin->SetMemoryBudget(Caller(ex), in["bytes"].get<uint64_t>());
  if (!s.ok()) co_return co_await Reply(ex, StatusError(ex, s, "bytes"));
  co_return co_await ReplyMemory(ex, *admin);
}

// DELETE /admin/v1/memory/budget: back to what the device's pressure allows.
asio::awaitable<bool> DeleteMemoryBudget(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const Status s = admin->SetMemoryBudget(Caller(ex), std::nullopt);
  if (!s.ok()) co_return co_await Reply(ex, StatusError(ex, s));
  co_return co_await ReplyMemory(ex, *admin);
}

// POST /admin/v1/memory/replan: a new plan now.
asio::awaitable<bool> PostReplan(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const Status s = admin->Replan(Caller(ex));
  if (!s.ok()) co_return co_await Reply(ex, StatusError(ex, s));
  co_return co_await ReplyMemory(ex, *admin);
}

// POST /admin/v1/reload {"model": NAME}: switch to another model of model_dir.
asio::awaitable<bool> Reload(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const json in = BodyJson(ex.req);
  if (!in.is_object() || !in.contains("model") || !in["model"].is_string()) {
    const std::string why = "the body must be a JSON object {\"model\": \"NAME.gguf\"}";
    admin->RecordRefused(Caller(ex), "reload", why);
    co_return co_await Reply(
        ex, ErrorResponse(ex.req, http::status::bad_request, why, "model", "invalid_body"));
  }
  struct Outcome {
    std::optional<Result<adminpb::ReloadResponse>> result;
    AdminController::ReloadRefusal refusal;
    std::atomic<bool> done{false};
  };
  auto outcome = std::make_shared<Outcome>();
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  AdminController::ReloadInBackground(
      ex.ctx.admin, Caller(ex), in["model"].get<std::string>(),
      [outcome, wakeup](const Result<adminpb::ReloadResponse>& result,
                        const AdminController::ReloadRefusal& refusal) {
        outcome->result = result;
        outcome->refusal = refusal;
        outcome->done.store(true);
        wakeup->Notify();
      });
  while (!outcome->done.load()) co_await wakeup->Wait(std::chrono::milliseconds(250));
  const Result<adminpb::ReloadResponse>& result = *outcome->result;
  const AdminController::ReloadRefusal& refusal = outcome->refusal;
  if (!result.ok()) {
    http::status status = HttpStatusFor(refusal.status.code());
    if (refusal.code == "reload_disabled") status = http::status::forbidden;
    if (refusal.code == "reload_in_progress") status = http::status::conflict;
    if (refusal.code == "model_load_failed") status = http::status::unprocessable_entity;
    co_return co_await Reply(
        ex, ErrorResponse(ex.req, status, refusal.status.message(), "model", refusal.code));
  }
  const json body = AdminJson(*result);
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

// GET /admin/v1/models: the models reload can switch to.
asio::awaitable<bool> Models(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  auto models = admin->Models();
  if (!models.ok()) {
    co_return co_await Reply(ex, ErrorResponse(ex.req, http::status::forbidden,
                                               models.status().message(), "", "reload_disabled"));
  }
  json body = AdminJson(*models);
  body["object"] = "list";
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

// One event as SSE: its seq as the id, "status" or "action" as the type, the message as JSON.
std::string EventText(const adminpb::Event& e) {
  const bool status = e.has_status();
  const json data = status ? AdminJson(e.status()) : ActionEventJson(e.action());
  return "id: " + std::to_string(e.seq()) + "\nevent: " + (status ? "status" : "action") +
         "\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

// SSE: "event: status" every second and "event: action" per admin action, until the client
// leaves or the server shuts down.
asio::awaitable<bool> Events(HttpExchange& ex) {
  AdminController* admin = Controller(ex);
  if (!admin) co_return co_await Reply(ex, NotServing(ex));
  const bool chunked = ex.req.version() >= 11;
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  auto sub = admin->Subscribe([wakeup] { wakeup->Notify(); });
  if (!co_await StartEventStream(ex.stream, ex.req, "", ex.log, ex.opts.write_timeout)) {
    co_return false;
  }
  auto last_write = std::chrono::steady_clock::now();
  while (!sub->closed() && !(ex.state && ex.state->draining.load())) {
    std::vector<AdminEvent> events;
    const int64_t dropped = sub->Drain(&events);
    std::string bytes;
    if (dropped > 0) {
      bytes += "event: dropped\ndata: {\"events\":" + std::to_string(dropped) + "}\n\n";
    }
    for (const AdminEvent& e : events) bytes += EventText(*e);
    const auto now = std::chrono::steady_clock::now();
    if (bytes.empty() && now - last_write >= kKeepAlive) bytes = ": keep-alive\n\n";
    if (!bytes.empty()) {
      if (!co_await WriteEventBytes(ex.stream, bytes, chunked, ex.opts.write_timeout)) {
        co_return false;
      }
      last_write = now;
      continue;
    }
    co_await wakeup->Wait(std::chrono::milliseconds(1000));
  }
  if (!chunked) co_return false;
  co_await EndChunkedBody(ex.stream, ex.opts.write_timeout);
  co_return false;
}

}  // namespace

void AddAdminRoutes(HttpRouter& r) {
  r.Add({http::verb::get, "/admin/v1/status", AuthScope::kAdmin, GetStatus});
  r.Add({http::verb::get, "/admin/v1/requests", AuthScope::kAdmin, ListRequests});
  r.Add({http::verb::delete_, "/admin/v1/requests/", AuthScope::kAdmin, CancelRequest});
  r.Add({http::verb::post, "/admin/v1/drain", AuthScope::kAdmin, Drain});
  r.Add({http::verb::post, "/admin/v1/resume", AuthScope::kAdmin, Resume});
  r.Add({http::verb::put, "/admin/v1/log-level", AuthScope::kAdmin, SetLogLevel});
  r.Add({http::verb::post, "/admin/v1/reload", AuthScope::kAdmin, Reload});
  r.Add({http::verb::get, "/admin/v1/models", AuthScope::kAdmin, Models});
  r.Add({http::verb::get, "/admin/v1/events", AuthScope::kAdmin, Events});
  r.Add({http::verb::get, "/admin/v1/memory", AuthScope::kAdmin, GetMemory});
  r.Add({http::verb::get, "/admin/v1/shards", AuthScope::kAdmin, GetShards});
  r.Add({http::verb::put, "/admin/v1/memory/budget", AuthScope::kAdmin, PutMemoryBudget});
  r.Add({http::verb::delete_, "/admin/v1/memory/budget", AuthScope::kAdmin, DeleteMemoryBudget});
  r.Add({http::verb::post, "/admin/v1/memory/replan", AuthScope::kAdmin, PostReplan});
}

}  // namespace sparrow::server
