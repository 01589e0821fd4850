#include "server/shard/grpc_remote_layers.h"

#include <spdlog/spdlog.h>

#include "server/shard/shard_wire.h"

namespace sparrow::server {

namespace {

using Clock = std::chrono::steady_clock;

std::string Range(int64_t first, int64_t end) {
  return "layers " + std::to_string(first) + ".." + std::to_string(end - 1);
}

std::shared_ptr<grpc::Channel> Channel(const RemoteLayersOptions& o) {
  grpc::ChannelArguments args;
  // A long prompt chunk's hidden states exceed gRPC's default 4 MiB message limit.
  args.SetMaxReceiveMessageSize(1 << 30);
  args.SetMaxSendMessageSize(1 << 30);
  return grpc::CreateCustomChannel(o.address, o.credentials, args);
}

}  // namespace

GrpcRemoteLayers::GrpcRemoteLayers(RemoteLayersOptions options)
    : o_(std::move(options)),
      stub_(::sparrow::shard::v1::ShardWorker::NewStub(Channel(o_))),
      watcher_([this] { Watch(); }) {}

GrpcRemoteLayers::~GrpcRemoteLayers() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    stop_ = true;
  }
  watch_cv_.notify_all();
  watcher_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_) {
    stream_->WritesDone();
    call_->TryCancel();
    stream_->Finish();
  }
}

void GrpcRemoteLayers::Watch() {
  std::unique_lock<std::mutex> lock(watch_mu_);
  while (!stop_) {
    if (!watched_) {
      watch_cv_.wait(lock);
      continue;
    }
    if (Clock::now() >= deadline_) {
      timed_out_ = true;
      watched_->TryCancel();
      watched_ = nullptr;
      continue;
    }
    watch_cv_.wait_until(lock, deadline_);
  }
}

void GrpcRemoteLayers::OnBlockCopy(int32_t src, int32_t dst) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_) pending_.push_back({KvBlockOp::Kind::kCopy, src, dst, 0});
}

void GrpcRemoteLayers::OnPoolResize(int64_t n_blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  n_blocks_ = n_blocks;
  if (stream_) pending_.push_back({KvBlockOp::Kind::kResize, 0, 0, n_blocks});
}

grpc::Status GrpcRemoteLayers::CloseLocked() {
  stream_->WritesDone();
  grpc::Status st = stream_->Finish();
  stream_.reset();
  call_.reset();
  return st;
}

Status GrpcRemoteLayers::FailLocked(const std::string& what) {
  ++stats_.failures;
  stats_.last_error = name() + " (" + Range(o_.first_layer, o_.end_layer) + "): " + what;
  spdlog::warn("shard: {}", stats_.last_error);
  if (stream_) {
    call_->TryCancel();
    stream_->Finish();
  }
  stream_.reset();
  call_.reset();
  pending_.clear();
  retry_after_ = Clock::now() + std::chrono::seconds(1);
  return Unavailable(stats_.last_error);
}

Status GrpcRemoteLayers::OpenLocked() {
  call_ = std::make_unique<grpc::ClientContext>();
  if (!o_.key.empty()) call_->AddMetadata("authorization", "Bearer " + o_.key);
  // The session's first answer (the assignment's) must come within a step's timeout too.
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watched_ = call_.get();
    deadline_ = Clock::now() + o_.step_timeout;
    timed_out_ = false;
  }
  watch_cv_.notify_all();
  stream_ = stub_->Serve(call_.get());
  req_.Clear();
  auto* a = req_.mutable_assign();
  a->set_first_layer(o_.first_layer);
  a->set_end_layer(o_.end_layer);
  a->set_kv_block_size(o_.kv_block_size);
  a->set_kv_blocks(n_blocks_);
  a->set_model_digest(o_.model_digest);
  const bool ok = stream_->Write(req_) && stream_->Read(&resp_);
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watched_ = nullptr;
  }
  if (!ok) {
    const grpc::Status st = CloseLocked();
    return FailLocked("session refused: " + (st.ok() ? std::string("the worker closed the stream")
                                             : st.error_message().empty() ? "unreachable"
                                                                          : st.error_message()));
  }
  ++stats_.sessions;
  pending_.clear();
  spdlog::info("shard: {} computes {}", name(), Range(o_.first_layer, o_.end_layer));
  return Status::Ok();
}

Status GrpcRemoteLayers::Run(std::span<const StageSegment> segments, int64_t n_embd,
                             std::span<float> hidden) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stream_) {
    if (Clock::now() < retry_after_) return Unavailable(stats_.last_error);
    SPARROW_RETURN_IF_ERROR(OpenLocked());
  }
  req_.Clear();
  auto* step = req_.mutable_step();
  const uint64_t id = next_id_++;
  step->set_id(id);
  for (const KvBlockOp& op : pending_) OpToProto(op, step->add_ops());
  pending_.clear();
  for (const StageSegment& s : segments) {
    auto* seg = step->add_segments();
    seg->mutable_tokens()->Add(s.tokens.begin(), s.tokens.end());
    seg->set_start_pos(s.start_pos);
    seg->mutable_blocks()->Add(s.blocks.begin(), s.blocks.end());
  }
  step->set_encoding(o_.encoding);
  EncodeHidden(hidden, o_.encoding, step->mutable_hidden());
  const auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> w(watch_mu_);
    watched_ = call_.get();
    deadline_ = t0 + o_.step_timeout;
    timed_out_ = false;
  }
  watch_cv_.notify_all();
  const bool ok = stream_->Write(req_) && stream_->Read(&resp_);
  bool late = false;
  {
    std::lock_guard<std::mutex> w(watch_mu_);
    watched_ = nullptr;
    late = timed_out_;
  }
  if (!ok) {
    if (late) {
      return FailLocked("no answer within " + std::to_string(o_.step_timeout.count()) +
                        " ms (worker_timeout_ms)");
    }
    const grpc::Status st = CloseLocked();
    return FailLocked(st.ok() ? "the worker ended the session" : st.error_message());
  }
  stats_.bytes_sent += static_cast<int64_t>(req_.ByteSizeLong());
  stats_.bytes_received += static_cast<int64_t>(resp_.ByteSizeLong());
  if (resp_.id() != id) return FailLocked("answered step " + std::to_string(resp_.id()));
  if (Status st = DecodeHidden(resp_.hidden(), resp_.encoding(), hidden.size(), hidden); !st.ok()) {
    return FailLocked(st.message());
  }
  (void)n_embd;
  ++stats_.steps;
  stats_.worker_ms += resp_.compute_ms();
  stats_.wall_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  stats_.worker_kv_bytes = resp_.kv_bytes();
  return Status::Ok();
}

ShardLinkStats GrpcRemoteLayers::link_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ShardLinkStats s = stats_;
  s.address = o_.address;
  s.first_layer = o_.first_layer;
  s.end_layer = o_.end_layer;
  s.connected = stream_ != nullptr;
  return s;
}

}  // namespace sparrow::server
