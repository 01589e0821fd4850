#pragma once
// GrpcRemoteLayers: a layer range computed by a worker sparrowd, reached over one gRPC stream
// (sparrow.shard.v1.ShardWorker/Serve). The session opens at the first step, assigned the range
// and the coordinator's KV pool size; each step carries the pool's block copies since the last
// one, the batch's token ids, positions and block tables, and the hidden state.
// Several steps may be in flight (the micro-batches of a pipeline): a reader thread takes the
// answers as they come, so the worker is never held up writing one while this side writes the
// next step. A worker that fails, refuses or stays silent past the step timeout fails the step
// (and its session and every step in flight: its KV is gone, which ForwardPass::remote_failed
// tells the scheduler); the next step opens a new session, at most once a second, so a worker
// that comes back is taken in again. At most the answers asked for are held: a worker that
// sends more ends its session.
// Start, Finish and the KV callbacks come from one thread (the scheduler's); link_stats from any.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/kv_cache.h"
#include "engine/runtime/remote_layers.h"
#include "engine/shard/kv_block_op.h"
#include "server/core/worker_ranges.h"
#include "sparrow/shard/v1/shard.grpc.pb.h"

namespace sparrow::server {

struct RemoteLayersOptions {
  std::string address;  // host:port of the worker
  std::string key;      // the worker key (worker_key_file's first), never the admin key
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  int64_t first_layer = 0, end_layer = 0;
  int64_t kv_block_size = 16;
  KvTypes kv_types;    // the coordinator's pool's
  int64_t n_embd = 0;  // sizes the largest answer taken (ShardMaxMessageBytes)
  std::string model_digest;
  ::sparrow::shard::v1::Encoding encoding = ::sparrow::shard::v1::ENCODING_F32;
  std::chrono::milliseconds step_timeout{10000};
  // Galaxy's tensor split: the worker's slice of each layer of the range; absent: whole layers.
  std::optional<TensorSlice> slice;
};

class GrpcRemoteLayers final : public RemoteLayers, public ShardLink {
 public:
  explicit GrpcRemoteLayers(RemoteLayersOptions options);
  ~GrpcRemoteLayers() override;

  int64_t first_layer() const override { return o_.first_layer; }
  int64_t end_layer() const override { return o_.end_layer; }
  std::string name() const override { return "worker " + o_.address; }
  Status Start(std::span<const StageSegment> segments, int64_t n_embd,
               std::span<float> hidden) override;
  const TensorSlice* slice() const override { return o_.slice ? &*o_.slice : nullptr; }
  Status StartPart(LayerPart part, int64_t layer, std::span<const StageSegment> segments,
                   int64_t n_embd, std::span<float> hidden) override;
  Status Finish() override;
  bool Unreachable() override;
  void OnBlockCopy(int32_t src, int32_t dst) override;
  void OnPoolResize(int64_t n_blocks) override;

  ShardLinkStats link_stats() const override;

 private:
  using StageStream = grpc::ClientReaderWriter<::sparrow::shard::v1::StageRequest,
                                               ::sparrow::shard::v1::StageResponse>;
  struct InFlight {
    uint64_t id = 0;
    std::span<float> hidden;
    std::chrono::steady_clock::time_point sent;
    int64_t bytes_sent = 0;
  };

  Status Open();
  // Writes req_ with the stall watchdog armed (a stopped worker stops reading, and a write then
  // waits for it).
  bool WriteWatched(bool* late);
  // The session's next answer, or false when it ended or none came by `deadline`.
  bool NextAnswer(std::chrono::steady_clock::time_point deadline,
                  ::sparrow::shard::v1::StageResponse* out, bool* late);
  // Ends the session: its stream, its reader; the worker's status says why it ended.
  grpc::Status Close();
  // Close, and why the session ended, for an error.
  std::string Ended();
  std::string Late() const;
  Status Fail(const std::string& what);
  void ReadAnswers(StageStream* stream, grpc::ClientContext* call);
  void Watch();

  RemoteLayersOptions o_;
  std::unique_ptr<::sparrow::shard::v1::ShardWorker::Stub> stub_;

  // The session (the scheduler thread's, but for the reader and the watchdog).
  std::unique_ptr<grpc::ClientContext> call_;
  std::unique_ptr<StageStream> stream_;
  std::thread reader_;
  int64_t n_blocks_ = 1;
  std::vector<KvBlockOp> pending_;
  uint64_t next_id_ = 1;
  std::deque<InFlight> in_flight_;
  // Steps in flight when the session failed: each one's Finish returns this.
  int64_t failed_in_flight_ = 0;
  Status failure_;
  std::chrono::steady_clock::time_point retry_after_{};
  std::chrono::steady_clock::time_point last_answer_{};
  ::sparrow::shard::v1::StageRequest req_;

  // What the reader hands over, and the stats.
  mutable std::mutex mu_;
  std::condition_variable answered_;
  std::deque<::sparrow::shard::v1::StageResponse> answers_;  // guarded by mu_
  bool reader_done_ = false;                                 // guarded by mu_
  // Answers asked for (the assignment's, each step's) and not received yet: the reader takes no
  // more than that, and ends the session on an answer nobody asked for.
  int64_t asked_ = 0;     // guarded by mu_
  bool unasked_ = false;  // guarded by mu_
  ShardLinkStats stats_;  // guarded by mu_

  // The stall watchdog: cancels the call when a write is stuck.
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  grpc::ClientContext* watched_ = nullptr;  // guarded by watch_mu_
  std::chrono::steady_clock::time_point deadline_;
  bool timed_out_ = false;
  bool stop_ = false;
  std::thread watcher_;
};

}  // namespace sparrow::server
