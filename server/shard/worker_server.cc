#include "server/shard/worker_server.h"

#include <thread>

#include "server/grpc/grpc_server.h"
#include "server/shard/shard_wire.h"

namespace sparrow::server {

Result<std::unique_ptr<WorkerServer>> WorkerServer::Start(const ServerConfig& config) {
  std::unique_ptr<WorkerServer> w(new WorkerServer());
  w->ctx_.config = config;
  SPARROW_ASSIGN_OR_RETURN(w->ctx_.auth, Authenticator::FromConfig(config, &w->ctx_.metrics));
  if (config.grpc_port < 0) {
    return InvalidArgument("config: a worker serves over gRPC; 'grpc_port' must not be -1");
  }
  auto model = Model::Load(config.model);
  if (!model.ok()) return model.status();
  w->model_ = std::move(model).value();
  const int threads = config.threads > 0
                          ? static_cast<int>(config.threads)
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  w->pool_ = std::make_unique<kernels::ThreadPool>(threads);
  w->service_ =
      std::make_unique<ShardWorkerService>(&w->ctx_, w->model_.get(), w->pool_.get(), config.model);

  SPARROW_ASSIGN_OR_RETURN(auto creds, ServerCredentialsFor(config.tls_cert, config.tls_key));
  grpc::ServerBuilder builder;
  // As sparrowd's own gRPC server: a port already taken is refused, not silently shared.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string address = JoinHostPort(config.host, static_cast<int>(config.grpc_port));
  builder.AddListeningPort(address, creds, &w->port_);
  // Hidden states of a long prompt chunk exceed gRPC's default 4 MiB message limit.
  builder.SetMaxReceiveMessageSize(1 << 30);
  builder.SetMaxSendMessageSize(1 << 30);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kShardWindowBytes);
  builder.RegisterService(w->service_.get());
  w->server_ = builder.BuildAndStart();
  if (!w->server_ || w->port_ == 0) {
    return IoError("cannot listen for gRPC on " + address + " (in use, or not an address here)");
  }
  return w;
}

WorkerServer::~WorkerServer() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

void WorkerServer::Shutdown() {
  // A session never ends on its own (it lasts as long as its coordinator): cancelled at once, so
  // the coordinator hears the worker is gone instead of waiting.
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

}  // namespace sparrow::server
