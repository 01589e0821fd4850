#pragma once
// ShardWorkerService: the worker side of collaborative inference (sparrow.shard.v1.ShardWorker):
// describes the model this device holds and computes the layer range a coordinator assigns, one
// step after another, on a LayerRangeRunner. Every call has passed WorkerKeyCheck (its server's
// credentials run it before a message is read). One coordinator's
// session computes at a time: a newer session (a coordinator that reconnected) cancels the older.
// Thread-safe (gRPC's sync server calls it from its threads).
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/model.h"
#include "server/core/server_context.h"
#include "sparrow/shard/v1/shard.grpc.pb.h"

namespace sparrow::server {

class ShardWorkerService final : public ::sparrow::shard::v1::ShardWorker::Service {
 public:
  // All must outlive the service; `ctx` gives the config.
  ShardWorkerService(ServerContext* ctx, const Model* model, kernels::ThreadPool* pool,
                     std::string model_path);

  const std::string& digest() const { return digest_; }

  grpc::Status Describe(grpc::ServerContext* call,
                        const ::sparrow::shard::v1::DescribeRequest* request,
                        ::sparrow::shard::v1::DescribeResponse* response) override;
  grpc::Status Serve(grpc::ServerContext* call,
                     grpc::ServerReaderWriter<::sparrow::shard::v1::StageResponse,
                                              ::sparrow::shard::v1::StageRequest>* stream) override;
  grpc::Status Echo(grpc::ServerContext* call, const ::sparrow::shard::v1::EchoRequest* request,
                    ::sparrow::shard::v1::EchoResponse* response) override;

 private:
  // Each layer's time for one decoded token and per token of a prompt chunk on this device,
  // measured once.
  std::pair<std::vector<double>, std::vector<double>> LayerProfile();

  ServerContext* ctx_;
  const Model* model_;
  kernels::ThreadPool* pool_;
  std::string path_;
  std::string digest_;

  std::mutex profile_mu_;
  std::optional<std::pair<std::vector<double>, std::vector<double>>> profile_;  // profile_mu_

  std::mutex session_mu_;
  std::condition_variable session_cv_;
  uint64_t session_serial_ = 0;               // guarded by session_mu_: the newest session
  grpc::ServerContext* computing_ = nullptr;  // guarded by session_mu_: the session computing
};

}  // namespace sparrow::server
