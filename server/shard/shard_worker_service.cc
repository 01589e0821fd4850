#include "server/shard/shard_worker_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "config/version.h"
#include "engine/memory/device_memory.h"
#include "engine/model/model_digest.h"
#include "engine/shard/layer_profile.h"
#include "engine/shard/layer_range_runner.h"
#include "server/grpc/grpc_auth.h"  // PeerAddress
#include "server/shard/shard_wire.h"

namespace sparrow::server {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The share of the device's memory its layers and their KV may take; the rest is the process,
// its scratch and the system's own.
constexpr uint64_t kLayerShare = 90;

grpc::Status Refuse(const Status& st) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, st.message());
}

}  // namespace

ShardWorkerService::ShardWorkerService(ServerContext* ctx, const Model* model,
                                       kernels::ThreadPool* pool, std::string model_path)
    : ctx_(ctx),
      model_(model),
      pool_(pool),
      path_(std::move(model_path)),
      digest_(ModelDigest(model->file())) {}

std::pair<std::vector<double>, std::vector<double>> ShardWorkerService::LayerProfile() {
  std::lock_guard<std::mutex> lock(profile_mu_);
  if (!profile_) {
    profile_.emplace(ProfileLayerDecodeMs(*model_, pool_), ProfileLayerPrefillMs(*model_, pool_));
  }
  return *profile_;
}

grpc::Status ShardWorkerService::Describe(grpc::ServerContext* call,
                                          const ::sparrow::shard::v1::DescribeRequest* request,
                                          ::sparrow::shard::v1::DescribeResponse* response) {
  (void)call;  // the worker key was checked before the call reached here (WorkerKeyCheck)
  const ModelConfig& c = model_->config();
  response->set_model_digest(digest_);
  response->set_model_file(path_);
  response->set_n_layer(c.n_layer);
  response->set_n_embd(c.n_embd);
  response->set_threads(pool_ ? pool_->size() : 1);
  response->set_memory_budget_bytes(static_cast<int64_t>(DeviceMemoryLimit() / 100 * kLayerShare));
  response->set_version(kSparrowVersion);
  if (request->profile()) {
    const auto [decode, prefill] = LayerProfile();
    for (double ms : decode) response->add_layer_decode_ms(ms);
    for (double ms : prefill) response->add_layer_prefill_ms(ms);
  }
  return grpc::Status::OK;
}

grpc::Status ShardWorkerService::Echo(grpc::ServerContext* call,
                                      const ::sparrow::shard::v1::EchoRequest* request,
                                      ::sparrow::shard::v1::EchoResponse* response) {
  (void)call;
  constexpr int64_t kMaxReply = int64_t{16} << 20;
  if (request->reply_bytes() < 0 || request->reply_bytes() > kMaxReply) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "reply_bytes " + std::to_string(request->reply_bytes()) +
                            " is outside 0.." + std::to_string(kMaxReply));
  }
  response->mutable_payload()->assign(static_cast<size_t>(request->reply_bytes()), '\0');
  return grpc::Status::OK;
}

grpc::Status ShardWorkerService::Serve(
    grpc::ServerContext* call,
    grpc::ServerReaderWriter<::sparrow::shard::v1::StageResponse,
                             ::sparrow::shard::v1::StageRequest>* stream) {
  shardpb::StageRequest req;
  if (!stream->Read(&req)) return grpc::Status::OK;
  if (!req.has_assign()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a session starts with an assignment, not a step");
  }
  const shardpb::Assign& as = req.assign();
  if (as.model_digest() != digest_) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this worker holds " + path_ + " (digest " + digest_ +
                            "), not the coordinator's model (digest " + as.model_digest() +
                            "): every device needs the same file");
  }
  const ShardAssignment assignment = AssignmentFromProto(as);
  auto runner = LayerRangeRunner::Create(*model_, pool_, assignment);
  if (!runner.ok()) return Refuse(runner.status());

  // The newest session computes; an older one still running is cancelled and waited for.
  std::unique_lock<std::mutex> lock(session_mu_);
  const uint64_t serial = ++session_serial_;
  if (computing_) computing_->TryCancel();
  session_cv_.wait(lock, [&] { return computing_ == nullptr || serial != session_serial_; });
  if (serial != session_serial_) {
    return grpc::Status(grpc::StatusCode::ABORTED, "a newer coordinator session replaced this one");
  }
  computing_ = call;
  lock.unlock();
  struct Release {
    ShardWorkerService* s;
    ~Release() {
      std::lock_guard<std::mutex> l(s->session_mu_);
      s->computing_ = nullptr;
      s->session_cv_.notify_all();
    }
  } release{this};

  spdlog::info("shard: {} assigned layers {}..{}{} ({} KV blocks of {})", PeerAddress(call->peer()),
               as.first_layer(), as.end_layer() - 1,
               assignment.slice ? ", a slice of each: " + assignment.slice->ToString() : "",
               as.kv_blocks(), as.kv_block_size());
  shardpb::StageResponse ack;
  if (!stream->Write(ack)) return grpc::Status::OK;

  const int64_t d = model_->config().n_embd;
  DecodedStep decoded;
  std::vector<float> hidden;
  shardpb::StageResponse resp;
  while (stream->Read(&req)) {
    if (!req.has_step()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session is assigned only once");
    }
    const auto t0 = Clock::now();
    const shardpb::Step& step = req.step();
    if (Status st = DecodeStep(step, &decoded); !st.ok()) return Refuse(st);
    if (Status st = (*runner)->Apply(decoded.ops); !st.ok()) return Refuse(st);
    // At most kMaxStepTokens rows of n_embd.
    hidden.resize(decoded.tokens * static_cast<size_t>(d));
    if (Status st = DecodeHidden(step.hidden(), step.encoding(), hidden.size(), hidden); !st.ok()) {
      return Refuse(st);
    }
    Status st;
    switch (step.part()) {
      case shardpb::PART_LAYERS:
        st = (*runner)->Run(decoded.segments, hidden);
        break;
      case shardpb::PART_ATTENTION:
        st = (*runner)->RunPart(LayerPart::kAttention, step.layer(), decoded.segments, hidden);
        break;
      case shardpb::PART_FFN:
        st = (*runner)->RunPart(LayerPart::kFfn, step.layer(), decoded.segments, hidden);
        break;
      default:
        st = InvalidArgument("step part " + std::to_string(step.part()) + " is unknown");
    }
    if (!st.ok()) return Refuse(st);
    resp.Clear();
    resp.set_id(step.id());
    resp.set_encoding(step.encoding());
    EncodeHidden(hidden, step.encoding(), resp.mutable_hidden());
    resp.set_compute_ms(MsSince(t0));
    resp.set_kv_bytes((*runner)->kv_bytes());
    if (!stream->Write(resp)) break;
  }
  spdlog::info("shard: session from {} ended", PeerAddress(call->peer()));
  return grpc::Status::OK;
}

}  // namespace sparrow::server
