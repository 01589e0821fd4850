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
  args.SetMaxReceiveMessageSize(ShardMaxMessageBytes(o.n_embd));
  args.SetMaxSendMessageSize(ShardMaxMessageBytes(o.n_embd));
  // Answers of the pipeline's micro-batches arrive while this side computes: a window that takes
  // a few of them keeps the worker from waiting on flow control.
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kShardWindowBytes);
  // A worker that comes back is tried within a second, however long it was away (gRPC's own
  // reconnection backoff grows to two minutes).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kShardReconnectMs);
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
  if (stream_) Close();
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
  if (stream_) pending_.push_back({KvBlockOp::Kind::kCopy, src, dst, 0});
}

void GrpcRemoteLayers::OnPoolResize(int64_t n_blocks) {
  n_blocks_ = n_blocks;
  if (stream_) pending_.push_back({KvBlockOp::Kind::kResize, 0, 0, n_blocks});
}

void GrpcRemoteLayers::ReadAnswers(StageStream* stream, grpc::ClientContext* call) {
  shardpb::StageResponse r;
  bool unasked = false;
  while (!unasked && stream->Read(&r)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (asked_ == 0) {
      unasked = unasked_ = true;
      break;
    }
    --asked_;
    answers_.push_back(std::move(r));
    answered_.notify_all();
  }
  if (unasked) call->TryCancel();
  std::lock_guard<std::mutex> lock(mu_);
  reader_done_ = true;
  answered_.notify_all();
}

bool GrpcRemoteLayers::NextAnswer(Clock::time_point deadline, shardpb::StageResponse* out,
                                  bool* late) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!answered_.wait_until(lock, deadline, [&] { return !answers_.empty() || reader_done_; })) {
    *late = true;
    return false;
  }
  if (answers_.empty()) return false;
  *out = std::move(answers_.front());
  answers_.pop_front();
  return true;
}

bool GrpcRemoteLayers::WriteWatched(bool* late) {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watched_ = call_.get();
    deadline_ = Clock::now() + o_.step_timeout;
    timed_out_ = false;
  }
  watch_cv_.notify_all();
  const bool ok = stream_->Write(req_);
  std::lock_guard<std::mutex> lock(watch_mu_);
  watched_ = nullptr;
  *late = timed_out_;
  return ok;
}

grpc::Status GrpcRemoteLayers::Close() {
  bool ended = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended = reader_done_;
  }
  // A session still open is cancelled: its worker may be stalled, and nothing in flight matters.
  if (!ended) call_->TryCancel();
  reader_.join();
  grpc::Status st = stream_->Finish();
  stream_.reset();
  call_.reset();
  std::lock_guard<std::mutex> lock(mu_);
  answers_.clear();
  stats_.connected = false;
  return st;
}

std::string GrpcRemoteLayers::Ended() {
  const grpc::Status st = Close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unasked_) return "the worker sent an answer no step asked for";
  }
  return st.ok()                      ? std::string("the worker ended the session")
         : st.error_message().empty() ? "unreachable"
                                      : st.error_message();
}

Status GrpcRemoteLayers::Fail(const std::string& what) {
  if (stream_) Close();
  failure_ = Unavailable(name() + " (" + Range(o_.first_layer, o_.end_layer) + "): " + what);
  failed_in_flight_ = static_cast<int64_t>(in_flight_.size());
  in_flight_.clear();
  pending_.clear();
  retry_after_ = Clock::now() + std::chrono::seconds(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.failures;
    stats_.last_error = failure_.message();
  }
  spdlog::warn("shard: {}", failure_.message());
  return failure_;
}

std::string GrpcRemoteLayers::Late() const {
  return "no answer within " + std::to_string(o_.step_timeout.count()) + " ms (worker_timeout_ms)";
}

Status GrpcRemoteLayers::Open() {
  call_ = std::make_unique<grpc::ClientContext>();
  if (!o_.key.empty()) call_->AddMetadata("authorization", "Bearer " + o_.key);
  stream_ = stub_->Serve(call_.get());
  {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.clear();
    reader_done_ = false;
    unasked_ = false;
    asked_ = 1;  // the assignment's acknowledgement
  }
  reader_ = std::thread(
      [this, stream = stream_.get(), call = call_.get()] { ReadAnswers(stream, call); });
  req_.Clear();
  auto* a = req_.mutable_assign();
  a->set_first_layer(o_.first_layer);
  a->set_end_layer(o_.end_layer);
  a->set_kv_block_size(o_.kv_block_size);
  a->set_kv_blocks(n_blocks_);
  a->set_kv_type_k(static_cast<uint32_t>(o_.kv_types.k));
  a->set_kv_type_v(static_cast<uint32_t>(o_.kv_types.v));
  a->set_model_digest(o_.model_digest);
  if (o_.slice) {
    auto* sl = a->mutable_slice();
    sl->set_kv_head_begin(o_.slice->kv_head_begin);
    sl->set_kv_head_end(o_.slice->kv_head_end);
    sl->set_ff_begin(o_.slice->ff_begin);
    sl->set_ff_end(o_.slice->ff_end);
  }
  // The session's first answer (the assignment's) must come within a step's timeout too.
  const auto deadline = Clock::now() + o_.step_timeout;
  bool late = false;
  shardpb::StageResponse ack;
  if (!WriteWatched(&late) || !NextAnswer(deadline, &ack, &late)) {
    return Fail("session refused: " + (late ? Late() : Ended()));
  }
  pending_.clear();
  last_answer_ = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.sessions;
    stats_.connected = true;
  }
  spdlog::info("shard: {} computes {}", name(), Range(o_.first_layer, o_.end_layer));
  return Status::Ok();
}

Status GrpcRemoteLayers::Start(std::span<const StageSegment> segments, int64_t n_embd,
                               std::span<float> hidden) {
  return StartPart(LayerPart::kLayers, 0, segments, n_embd, hidden);
}

Status GrpcRemoteLayers::StartPart(LayerPart part, int64_t layer,
                                   std::span<const StageSegment> segments, int64_t n_embd,
                                   std::span<float> hidden) {
  (void)n_embd;
  if ((part == LayerPart::kLayers) == o_.slice.has_value()) {
    return Internal(name() + (o_.slice ? " computes a slice of layers, not whole ones"
                                       : " computes whole layers, not a slice of one"));
  }
  if (failed_in_flight_ > 0) return failure_;
  if (!stream_) {
    if (Clock::now() < retry_after_) return failure_;
    SPARROW_RETURN_IF_ERROR(Open());
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
  if (part != LayerPart::kLayers) {
    step->set_part(part == LayerPart::kAttention ? shardpb::PART_ATTENTION : shardpb::PART_FFN);
    step->set_layer(layer);
  }
  EncodeHidden(hidden, o_.encoding, step->mutable_hidden());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++asked_;
  }
  const auto sent = Clock::now();
  bool late = false;
  if (!WriteWatched(&late)) return Fail(late ? Late() : Ended());
  in_flight_.push_back({id, hidden, sent, static_cast<int64_t>(req_.ByteSizeLong())});
  return Status::Ok();
}

Status GrpcRemoteLayers::Finish() {
  if (in_flight_.empty()) {
    if (failed_in_flight_ == 0) return Internal(name() + ": no step in flight to finish");
    --failed_in_flight_;
    return failure_;
  }
  const InFlight f = in_flight_.front();
  in_flight_.pop_front();
  // The worker computes its steps in order: this one's clock starts when the one before it came
  // back, or when it was sent.
  const auto deadline = std::max(f.sent, last_answer_) + o_.step_timeout;
  shardpb::StageResponse resp;
  bool late = false;
  if (!NextAnswer(deadline, &resp, &late)) return Fail(late ? Late() : Ended());
  last_answer_ = Clock::now();
  if (resp.id() != f.id) return Fail("answered step " + std::to_string(resp.id()));
  if (resp.encoding() != o_.encoding) {
    return Fail("answered in encoding " + std::to_string(resp.encoding()) + ", not " +
                std::string(EncodingName(o_.encoding)));
  }
  if (Status st = DecodeHidden(resp.hidden(), resp.encoding(), f.hidden.size(), f.hidden);
      !st.ok()) {
    return Fail(st.message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.steps;
  stats_.bytes_sent += f.bytes_sent;
  stats_.bytes_received += static_cast<int64_t>(resp.ByteSizeLong());
  stats_.worker_ms += resp.compute_ms();
  stats_.wall_ms += std::chrono::duration<double, std::milli>(last_answer_ - f.sent).count();
  stats_.worker_kv_bytes = resp.kv_bytes();
  return Status::Ok();
}

bool GrpcRemoteLayers::Unreachable() {
  // Open, or never failed, or its failed steps still to land: nothing to wait for.
  if (stream_ || failure_.ok() || failed_in_flight_ > 0) return false;
  if (Clock::now() < retry_after_) return true;
  return !Open().ok();
}

ShardLinkStats GrpcRemoteLayers::link_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ShardLinkStats s = stats_;
  s.address = o_.address;
  s.first_layer = o_.first_layer;
  s.end_layer = o_.end_layer;
  return s;
}

}  // namespace sparrow::server
