#include "server/core/server_context.h"

#include "server/core/engine_facade.h"
#include "server/core/model_dir.h"

namespace sparrow::server {

EngineFacade ServerContext::engine() const {
  if (auto m = served()) return EngineFacade(std::move(m), this);
  auto woken = EngineFor("");
  if (woken.ok()) return *woken;
  return EngineFacade(nullptr, this, woken.status());
}

Result<EngineFacade> ServerContext::EngineFor(const std::string& model) const {
  if (!switcher) {  // still starting or already stopped
    auto m = served();
    if (m && (model.empty() || model == m->model_id)) return EngineFacade(std::move(m), this);
    return Unavailable("no model is being served");
  }
  SPARROW_ASSIGN_OR_RETURN(std::shared_ptr<ServedModel> m, switcher->Acquire(model));
  return EngineFacade(std::move(m), this);
}

std::optional<EngineFacade> ServerContext::LoadedEngine() const {
  if (auto m = served()) return EngineFacade(std::move(m), this);
  return std::nullopt;
}

std::vector<ModelEntry> ServerContext::ListModels() const {
  return switcher ? switcher->List() : std::vector<ModelEntry>{};
}

std::string ServerContext::model_id() const {
  if (switcher) return switcher->current_id();
  const auto m = served();
  return m ? m->model_id : "";
}

Result<std::string> FirstModelOfDir(const ServerConfig& config) {
  SPARROW_ASSIGN_OR_RETURN(const std::vector<ModelFile> files, ListModelDir(config.models_dir));
  if (files.empty()) {
    return InvalidArgument("config: 'models_dir' '" + config.models_dir +
                           "' holds no .gguf file to serve");
  }
  const std::string wanted = config.model.substr(config.model.find_last_of('/') + 1);
  for (const ModelFile& f : files) {
    if (f.name == wanted) return f.path;
  }
  return files.front().path;
}

std::string JoinHostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && !host.starts_with("[");
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::unique_ptr<ServerContext>> CreateServerContext(const ServerConfig& config,
                                                           ConnectWorkersFn connect) {
  auto ctx = std::make_unique<ServerContext>();
  ctx->config = config;
  ctx->connect_workers = std::move(connect);
  ResponseStoreOptions store;
  store.max_entries = static_cast<size_t>(config.response_store_entries);
  store.max_bytes = static_cast<size_t>(config.response_store_mb) << 20;
  store.ttl = std::chrono::seconds(config.response_store_ttl_s);
  ctx->responses = std::make_shared<ResponseStore>(std::move(store));
  SPARROW_ASSIGN_OR_RETURN(ctx->auth, Authenticator::FromConfig(config, &ctx->metrics));
  std::string model_id = config.model_id;
  if (!config.models_dir.empty()) {
    // Models on demand: named by file stem; the admin API's reload picks among them too.
    SPARROW_ASSIGN_OR_RETURN(ctx->config.model, FirstModelOfDir(config));
    model_id = ModelIdFromPath(ctx->config.model);
    if (ctx->config.model_dir.empty()) ctx->config.model_dir = config.models_dir;
  }
  auto served = LoadServedModel(ctx->config, ctx->config.model, model_id, ctx->connect_workers);
  if (!served.ok()) return served.status();
  ctx->SwapServed(std::move(*served));
  ctx->switcher = std::make_unique<ModelSwitcher>(*ctx);
  return ctx;
}

}  // namespace sparrow::server
