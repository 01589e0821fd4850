#pragma once
// GrpcRemoteLayers: a layer range computed by a worker sparrowd, reached over one gRPC stream
// (sparrow.shard.v1.ShardWorker/Serve). The session opens at the first step, assigned the range
// and the coordinator's KV pool size; each step carries the pool's block copies since the last
// one, the batch's token ids, positions and block tables, and the hidden state.
// A worker that fails, refuses or stays silent past the step timeout fails the step (and its
// session: its KV is gone, which ForwardPass::remote_failed tells the scheduler); the next step
// opens a new session, at most once a second, so a worker that comes back is taken in again.
// Run and the KV callbacks come from the scheduler thread; thread-safe anyway.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/remote_layers.h"
#include "engine/shard/kv_block_op.h"
#include "server/core/worker_ranges.h"
#include "sparrow/shard/v1/shard.grpc.pb.h"

namespace sparrow::server {

struct RemoteLayersOptions {
  std::string address;  // host:port of the worker
  std::string key;      // its admin key
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  int64_t first_layer = 0, end_layer = 0;
  int64_t kv_block_size = 16;
  std::string model_digest;
  ::sparrow::shard::v1::Encoding encoding = ::sparrow::shard::v1::ENCODING_F32;
  std::chrono::milliseconds step_timeout{10000};
};

class GrpcRemoteLayers final : public RemoteLayers, public ShardLink {
 public:
  explicit GrpcRemoteLayers(RemoteLayersOptions options);
  ~GrpcRemoteLayers() override;

  int64_t first_layer() const override { return o_.first_layer; }
  int64_t end_layer() const override { return o_.end_layer; }
  std::string name() const override { return "worker " + o_.address; }
  Status Run(std::span<const StageSegment> segments, int64_t n_embd,
             std::span<float> hidden) override;
  void OnBlockCopy(int32_t src, int32_t dst) override;
  void OnPoolResize(int64_t n_blocks) override;

  ShardLinkStats link_stats() const override;

 private:
  Status OpenLocked();
  // Ends the session's stream; the worker's status says why it ended.
  grpc::Status CloseLocked();
  Status FailLocked(const std::string& what);
  void Watch();

  RemoteLayersOptions o_;
  std::unique_ptr<::sparrow::shard::v1::ShardWorker::Stub> stub_;

  mutable std::mutex mu_;
  std::unique_ptr<grpc::ClientContext> call_;
  std::unique_ptr<grpc::ClientReaderWriter<::sparrow::shard::v1::StageRequest,
                                           ::sparrow::shard::v1::StageResponse>>
      stream_;
  int64_t n_blocks_ = 1;
  std::vector<KvBlockOp> pending_;
  uint64_t next_id_ = 1;
  std::chrono::steady_clock::time_point retry_after_{};
  ShardLinkStats stats_;
  ::sparrow::shard::v1::StageRequest req_;
  ::sparrow::shard::v1::StageResponse resp_;

  // The stall watchdog: cancels the call when a step's answer is late.
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  grpc::ClientContext* watched_ = nullptr;  // guarded by watch_mu_
  std::chrono::steady_clock::time_point deadline_;
  bool timed_out_ = false;
  bool stop_ = false;
  std::thread watcher_;
};

}  // namespace sparrow::server
