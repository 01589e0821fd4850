#include "server/core/server_context.h"

#include "server/core/engine_facade.h"

namespace sparrow::server {

EngineFacade ServerContext::engine() const {
  return EngineFacade(served(), this);
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
  auto served = LoadServedModel(config, config.model, config.model_id, ctx->connect_workers);
  if (!served.ok()) return served.status();
  ctx->SwapServed(std::move(*served));
  return ctx;
}

}  // namespace sparrow::server
