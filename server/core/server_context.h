#pragma once
// ServerContext: everything one sparrowd process serves with: the model being served (with its
// tokenizer and scheduler, swapped as a whole by the admin API's reload), the configuration,
// the metrics, the keys and the request registry. Frontends (HTTP, gRPC) share one context and
// reach the engine only through engine() (engine_facade.h).
// Thread-safe to use from many threads (every member is); build and destroy on one thread.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/common/result.h"
#include "server/core/auth.h"
#include "server/core/metrics.h"
#include "server/core/model_switcher.h"
#include "server/core/request_registry.h"
#include "server/core/response_store.h"
#include "server/core/served_model.h"

namespace sparrow::server {

class AdminController;
class EngineFacade;

struct ServerContext {
  ServerConfig config;
  Metrics metrics;
  std::unique_ptr<Authenticator> auth;
  RequestRegistry requests;
  // Set by the admin API's drain: new generations are refused (503 / UNAVAILABLE) while the
  // running and queued ones finish.
  std::atomic<bool> draining{false};
  // Set by the admin API's reload while it drains the old model and swaps in the new one.
  std::atomic<bool> reloading{false};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // The Responses API's stored responses (sized from config by CreateServerContext).
  std::shared_ptr<ResponseStore> responses = std::make_shared<ResponseStore>();
  // How a served model reaches its workers (collaborative inference); empty without gRPC.
  ConnectWorkersFn connect_workers;

  // The engine as frontends see it, pinned to the model new requests go to: a request keeps the
  // facade it got (and so its model) for its whole life. A sleeping model is loaded first (the
  // caller waits); when that fails the facade refuses every request (Resolve says why).
  EngineFacade engine() const;
  // The engine of the model a request names ("": the one serving), loaded in place of the one
  // serving when it is another of models_dir, or asleep (ModelSwitcher::Acquire: NotFound,
  // Unavailable past model_switch_wait_ms, Internal naming a file that fails to load).
  Result<EngineFacade> EngineFor(const std::string& model) const;
  // The engine of the model loaded now, without loading one: nullopt while it sleeps.
  std::optional<EngineFacade> LoadedEngine() const;
  // Every model clients may name, with what is loaded (for /v1/models, /api/tags); never loads.
  std::vector<ModelEntry> ListModels() const;
  // The model loaded, or the one asleep: what /health and /ready name.
  std::string model_id() const;
  // The model new requests go to, for server/core and the admin API (reload, status); null
  // while the model sleeps (sleep_idle_seconds).
  std::shared_ptr<ServedModel> served() const {
    std::lock_guard<std::mutex> lock(served_mu_);
    return served_;
  }
  // Makes `next` the model new requests get; returns the one it replaces.
  std::shared_ptr<ServedModel> SwapServed(std::shared_ptr<ServedModel> next) {
    std::lock_guard<std::mutex> lock(served_mu_);
    std::swap(served_, next);
    return next;
  }

 private:
  // Declared before `admin` and after `metrics`: destroyed after the admin API's thread is gone
  // and before the metrics its sinks count into.
  mutable std::mutex served_mu_;
  std::shared_ptr<ServedModel> served_;  // guarded by served_mu_

 public:
  // Held by whoever takes a model out of served() or puts one in (the admin API's reload, the
  // switcher), so that two never interleave.
  std::mutex swap_mu;
  // Models on demand and idle sleep; its thread swaps served(), so it goes before served_.
  std::unique_ptr<ModelSwitcher> switcher;
  // The admin API (server/admin), set by whoever serves it; null: not served. Goes first on
  // destruction: its status thread reads the rest.
  std::shared_ptr<AdminController> admin;
};

// Loads the model and tokenizer named by `config` and starts the scheduler (reaching the workers
// through `connect`, when config.workers names some). Errors name the file or the setting at
// fault.
Result<std::unique_ptr<ServerContext>> CreateServerContext(const ServerConfig& config,
                                                           ConnectWorkersFn connect = {});

// With models_dir: the model served first, `model` when the directory has a file of that name,
// else its first by name. InvalidArgument naming the directory when it holds none.
Result<std::string> FirstModelOfDir(const ServerConfig& config);

// "host:port", with an IPv6 address in brackets ("[::1]:8080") as URLs and gRPC want it.
std::string JoinHostPort(const std::string& host, int port);

}  // namespace sparrow::server
