#include "server/http/ollama_models.h"

#include <chrono>
#include <cstdio>
#include <optional>

#include "api/ollama/ollama_request.h"
#include "api/openai/openai_types.h"
#include "config/version.h"
#include "server/core/engine_facade.h"
#include "server/http/ollama_response.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

// What is known of a model: all of it when it is the one loaded.
struct Described {
  ModelEntry entry;
  std::optional<ModelInfo> info;  // set: loaded
};

std::vector<Described> Describe(const ServerContext& ctx) {
  const std::optional<EngineFacade> loaded = ctx.LoadedEngine();
  std::vector<Described> out;
  for (ModelEntry& e : ctx.ListModels()) {
    Described d{std::move(e), std::nullopt};
    if (loaded && loaded->model_id() == d.entry.id) d.info = loaded->Info();
    out.push_back(std::move(d));
  }
  return out;
}

json Details(const Described& d) {
  const std::string family = d.info ? d.info->architecture : "";
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", family},
          {"families", family.empty() ? json(nullptr) : json::array({family})},
          {"parameter_size", d.info ? ParameterSize(d.info->n_params) : ""},
          {"quantization_level", d.info ? d.info->quantization : ""}};
}

json Model(const Described& d) {
  return {
      {"name", d.entry.id},
      {"model", d.entry.id},
      {"modified_at",
       OllamaTime(std::chrono::system_clock::time_point(std::chrono::seconds(d.entry.modified_s)))},
      {"size", d.info ? d.info->file_bytes : d.entry.bytes},
      {"digest", d.info ? d.info->digest : ""},
      {"details", Details(d)}};
}

asio::awaitable<bool> Tags(HttpExchange& ex) {
  json models = json::array();
  for (const Described& d : Describe(ex.ctx)) models.push_back(Model(d));
  const json body = {{"models", std::move(models)}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> Running(HttpExchange& ex) {
  json models = json::array();
  const int64_t idle = ex.ctx.config.sleep_idle_seconds;
  // Without idle sleep the model stays for good: Ollama's keep_alive -1 says so with a date
  // centuries away.
  const auto expires = std::chrono::system_clock::now() +
                       (idle > 0 ? std::chrono::seconds(idle) : std::chrono::hours(24 * 365 * 100));
  for (const Described& d : Describe(ex.ctx)) {
    if (!d.info) continue;
    json m = Model(d);
    m.erase("modified_at");
    m["expires_at"] = OllamaTime(expires);
    m["size_vram"] = 0;
    m["context_length"] = d.info->n_ctx;
    models.push_back(std::move(m));
  }
  const json body = {{"models", std::move(models)}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> Show(HttpExchange& ex) {
  std::string param;
  auto body = openai::ParseRequestBody(ex.req.body(), &param);
  Result<ollama::ShowRequest> r = body.ok() ? ollama::ParseShowRequest(*body, &param)
                                            : Result<ollama::ShowRequest>(body.status());
  if (!r.ok()) {
    co_return co_await Reply(ex,
                             OllamaError(ex.req, http::status::bad_request, r.status().message()));
  }
  const std::string name = ollama::ModelName(r->model);
  for (const Described& d : Describe(ex.ctx)) {
    if (d.entry.id != name) continue;
    json info = json::object();
    if (d.info) {
      info["general.architecture"] = d.info->architecture;
      info["general.parameter_count"] = d.info->n_params;
      info[d.info->architecture + ".context_length"] = d.info->n_ctx;
    }
    const json answer = {{"modelfile", "# served by sparrowd " + std::string(kSparrowVersion) +
                                           "\nFROM " + d.entry.file_name + "\n"},
                         {"parameters", ""},
                         {"template", ""},
                         {"details", Details(d)},
                         {"model_info", std::move(info)},
                         {"capabilities", json::array({"completion"})},
                         {"modified_at", OllamaTime(std::chrono::system_clock::time_point(
                                             std::chrono::seconds(d.entry.modified_s)))}};
    co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, answer));
  }
  co_return co_await Reply(
      ex, OllamaError(ex.req, http::status::not_found, "model '" + r->model + "' not found"));
}

asio::awaitable<bool> Version(HttpExchange& ex) {
  const json body = {{"version", kOllamaApiVersion}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

asio::awaitable<bool> Root(HttpExchange& ex) {
  HttpResponse res(http::status::ok, ex.req.version());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set(http::field::server, "sparrowd");
  res.keep_alive(ex.req.keep_alive());
  res.body() = "Ollama is running";
  res.prepare_payload();
  if (ex.req.method() == http::verb::head) {
    res.body().clear();  // the length stays the GET's, as HEAD answers say it
  }
  co_return co_await Reply(ex, std::move(res));
}

}  // namespace

std::string ParameterSize(int64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (n < 1'000) {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
    return buf;
  }
  if (n < 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%.0fK", v / 1e3);
    return buf;
  }
  const bool billions = n >= 1'000'000'000;
  std::snprintf(buf, sizeof(buf), "%.1f", billions ? v / 1e9 : v / 1e6);
  std::string out = buf;
  if (out.ends_with(".0")) out.resize(out.size() - 2);  // "7B", not "7.0B"
  return out + (billions ? "B" : "M");
}

void AddOllamaModelRoutes(HttpRouter& r) {
  r.Add({http::verb::get, "/api/tags", AuthScope::kApiKey, Tags});
  r.Add({http::verb::get, "/api/ps", AuthScope::kApiKey, Running});
  r.Add({http::verb::post, "/api/show", AuthScope::kApiKey, Show});
  r.Add({http::verb::get, "/api/version", AuthScope::kOpen, Version});
  r.Add({http::verb::get, "/", AuthScope::kOpen, Root, /*exact=*/true});
  r.Add({http::verb::head, "/", AuthScope::kOpen, Root, /*exact=*/true});
}

}  // namespace sparrow::server
