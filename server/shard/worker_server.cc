#include "server/shard/worker_server.h"

#include <thread>

#include "server/grpc/grpc_server.h"
#include "server/shard/shard_link_security.h"
#include "server/shard/shard_wire.h"

namespace sparrow::server {

Result<std::unique_ptr<WorkerServer>> WorkerServer::Start(const ServerConfig& config) {
  std::unique_ptr<WorkerServer> w(new WorkerServer());
  w->ctx_.config = config;
  // Refused before the model loads: no shard service without a worker key.
  SPARROW_ASSIGN_OR_RETURN(std::vector<std::string> keys, ReadWorkerKeys(config));
  SPARROW_ASSIGN_OR_RETURN(auto creds, WorkerServerCredentials(config, std::move(keys)));
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

  grpc::ServerBuilder builder;
  // As sparrowd's own gRPC server: a port already taken is refused, not silently shared.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string address = JoinHostPort(config.host, static_cast<int>(config.grpc_port));
  builder.AddListeningPort(address, creds, &w->port_);
  // Hidden states of a long prompt chunk exceed gRPC's default 4 MiB message limit: the largest
  // legitimate step of this model. No message of a call is read before its key is checked
  // (WorkerKeyCheck, in the credentials); before that only the HTTP/2 windows of a few streams
  // hold what a peer sent.
  const int max_message = ShardMaxMessageBytes(w->model_->config().n_embd);
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  // A session, the supervisor's probes and an Echo: a connection needs no more streams.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 8);
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
