#pragma once
// WorkerServer: `sparrowd --worker`: loads the model and serves its layers to a coordinator over
// gRPC (ShardWorkerService) on grpc_port, with TLS when tls_cert is set. It serves no API of its
// own. Refuses to start without a worker key (worker_key_file): the coordinator must send one;
// off loopback it needs TLS, and asks the coordinator for its certificate.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "config/server_config.h"
#include "engine/common/result.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "server/core/server_context.h"
#include "server/shard/shard_worker_service.h"

namespace sparrow::server {

class WorkerServer {
 public:
  static Result<std::unique_ptr<WorkerServer>> Start(const ServerConfig& config);
  ~WorkerServer();

  int port() const { return port_; }
  const std::string& digest() const { return service_->digest(); }
  int64_t n_layer() const { return model_->config().n_layer; }
  // Ends the sessions at once (their coordinators see the worker gone) and stops.
  void Shutdown();

 private:
  WorkerServer() = default;

  ServerContext ctx_;  // the keys and the config; no model is served through it
  std::unique_ptr<Model> model_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<ShardWorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace sparrow::server
