#pragma once
// ServerContext: everything one sparrowd process serves with: the model, its tokenizer, the
// compute pool, the scheduler, the configuration and the metrics. Frontends (HTTP, gRPC) share
// one context and reach the engine only through `scheduler`.
// Thread-safe to use from many threads (every member is); build and destroy on one thread.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "config/server_config.h"
#include "engine/common/result.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "engine/sched/scheduler.h"
#include "engine/sparse/sparse_plan.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/core/auth.h"
#include "server/core/metrics.h"
#include "server/core/request_registry.h"

namespace sparrow::server {

class AdminController;

struct ServerContext {
  ServerConfig config;
  std::string model_id;       // what clients name in "model"
  std::string chat_template;  // a template family name or the GGUF Jinja text
  int64_t n_ctx = 0;          // positions one request may use (prompt + output)
  // Declaration order is destruction order in reverse: the scheduler goes first, while the
  // model, pool and metrics its sinks use are still alive.
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<kernels::ThreadPool> pool;
  std::shared_ptr<const SparsePlan> sparse_plan;  // null: dense
  Metrics metrics;
  std::unique_ptr<Authenticator> auth;
  RequestRegistry requests;
  // Set by the admin API's drain: new generations are refused (503 / UNAVAILABLE) while the
  // running and queued ones finish.
  std::atomic<bool> draining{false};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::unique_ptr<Scheduler> scheduler;
  // The admin API (server/admin), set by whoever serves it; null: not served. Goes first on
  // destruction: its status thread reads the rest.
  std::shared_ptr<AdminController> admin;
};

// Loads the model and tokenizer named by `config` and starts the scheduler. Errors name the
// file or the setting at fault.
Result<std::unique_ptr<ServerContext>> CreateServerContext(const ServerConfig& config);

// The sparse plan the config asks for (keys sparsity, profile, sparsity_method); null for dense.
Result<std::shared_ptr<const SparsePlan>> MakeSparsePlanFromConfig(const ServerConfig& config,
                                                                   const Model& model,
                                                                   kernels::ThreadPool* pool);

// "host:port", with an IPv6 address in brackets ("[::1]:8080") as URLs and gRPC want it.
std::string JoinHostPort(const std::string& host, int port);

// The model id for a model path: its file name without ".gguf".
std::string ModelIdFromPath(const std::string& path);

}  // namespace sparrow::server
