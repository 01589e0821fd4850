#include "server/grpc/generate_reactor.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "server/chat/chat_output.h"
#include "server/core/streaming_sink.h"
#include "server/grpc/grpc_status.h"

namespace sparrow::server {
namespace {

v1::FinishReason ToProto(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kContext:
      return v1::FINISH_REASON_CONTEXT;
    case FinishReason::kCancelled:
    case FinishReason::kError:
      return v1::FINISH_REASON_CANCELLED;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

void AddDelta(const ChatDelta& d, v1::GenerateResponse* m) {
  m->mutable_text()->append(d.content);
  m->mutable_reasoning()->append(d.reasoning);
  for (const ChatToolCall& c : d.tool_calls) {
    v1::ToolCall* t = m->add_tool_calls();
    t->set_id(c.id);
    t->set_name(c.name);
    t->set_arguments(c.arguments);
  }
}

// Finishes an RPC that never reached the scheduler.
class FailedReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit FailedReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// One log line per finished stream, like the HTTP frontend's.
void LogCall(const ServerContext& ctx, const grpc::Status& status, const FinishInfo& info,
             double ms) {
  const char* code = GrpcCodeName(status.error_code());
  const char* finish = status.ok() ? FinishReasonName(info.reason) : "-";
  if (ctx.config.log_format == "json") {
    nlohmann::json j = {{"event", "grpc_stream"},
                        {"code", code},
                        {"duration_ms", ms},
                        {"prompt_tokens", info.prompt_tokens},
                        {"cached_tokens", info.cached_prompt_tokens},
                        {"completion_tokens", info.completion_tokens},
                        {"ttft_ms", info.ttft_ms},
                        {"finish_reason", finish}};
    spdlog::info("{}", j.dump());
    return;
  }
  spdlog::info(
      "grpc stream {} {:.1f}ms prompt_tokens={} cached_tokens={} completion_tokens={} "
      "ttft={:.1f}ms finish={}",
      code, ms, info.prompt_tokens, info.cached_prompt_tokens, info.completion_tokens, info.ttft_ms,
      finish);
}

}  // namespace

// What the gRPC threads and the scheduler thread share. The sink's on_ready holds it by
// shared_ptr, so a late callback after OnDone finds `reactor` null instead of a dead object.
struct GenerateReactor::Shared {
  // The model the request runs on, kept while the sink (which uses its tokenizer) lives: first,
  // so it is destroyed last. Set by Start, let go in OnDone.
  std::optional<EngineFacade> engine;
  std::mutex mu;
  GenerateReactor* reactor = nullptr;  // null once gRPC is done with the RPC
  std::shared_ptr<StreamingSink> sink;
  std::optional<ChatOutputParser> parser;  // Chat: reasoning and tool calls out of the text
  bool logprobs = false;
  bool predicted = false;    // the request had a prediction: Usage counts its tokens
  bool writing = false;      // a StartWrite is in flight; `message` is gRPC's
  bool finishing = false;    // Finish was called; nothing more may be started
  bool client_gone = false;  // cancelled by the client or a write failed
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  v1::GenerateResponse message;    // the message being written
  RequestRegistry::Ticket ticket;  // listed for the admin API until OnDone

  // Writes whatever the sink has queued, or finishes when it is done. gRPC calls are made
  // after unlocking: the reactor outlives them because only this function calls Finish.
  void Pump();
};

void GenerateReactor::Shared::Pump() {
  std::unique_lock<std::mutex> lock(mu);
  if (reactor == nullptr || writing || finishing) return;
  if (client_gone && !sink->finished()) {
    // Cancelled (by the client, or by gRPC at the end of a shutdown) before the scheduler has
    // ended the request: finish the RPC now; the scheduler drops the request at its next step.
    // A request still queued would otherwise keep the RPC, and a shutdown, waiting.
    finishing = true;
    GenerateReactor* r = reactor;
    const grpc::Status status(grpc::StatusCode::CANCELLED, "cancelled");
    r->ctx_.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
    LogCall(r->ctx_, status, FinishInfo{},
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    lock.unlock();
    r->Finish(status);
    return;
  }
  std::vector<StreamChunk> chunks;
  const bool finished = sink->Drain(&chunks);
  if (chunks.empty() && !finished) return;

  message.Clear();
  for (StreamChunk& c : chunks) {
    if (parser) {
      AddDelta(parser->Push(c.text), &message);
    } else {
      message.mutable_text()->append(c.text);
    }
    for (const TokenLogprob& t : c.tokens) {
      message.add_token_ids(t.token);
      if (logprobs) message.add_logprobs(t.logprob);
    }
  }
  // Text held back in case it began a tool call or a marker goes out with the last message.
  if (finished && parser) AddDelta(parser->Finish(), &message);
  GenerateReactor* r = reactor;
  ServerContext& ctx = r->ctx_;
  if (!finished) {
    writing = true;
    lock.unlock();
    r->StartWrite(&message);
    return;
  }

  finishing = true;
  const FinishInfo& info = sink->finish_info();
  grpc::Status status = grpc::Status::OK;
  if (client_gone) {
    status = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
  } else if (sink->overflowed()) {
    status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the client did not read the stream fast enough; request cancelled");
  } else if (info.reason == FinishReason::kError) {
    status = ToGrpcStatus(info.status);
  }
  ctx.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  LogCall(
      ctx, status, info,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (!status.ok()) {
    lock.unlock();
    r->Finish(status);
    return;
  }
  message.set_finish_reason(parser && parser->calls() > 0 && info.reason == FinishReason::kStop
                                ? v1::FINISH_REASON_TOOL_CALLS
                                : ToProto(info.reason));
  v1::Usage* usage = message.mutable_usage();
  usage->set_prompt_tokens(info.prompt_tokens);
  usage->set_cached_prompt_tokens(info.cached_prompt_tokens);
  usage->set_completion_tokens(info.completion_tokens);
  if (predicted) {
    usage->set_accepted_prediction_tokens(info.accepted_prediction_tokens);
    usage->set_rejected_prediction_tokens(info.rejected_prediction_tokens);
  }
  v1::Timings* timings = message.mutable_timings();
  timings->set_queue_ms(info.queue_ms);
  timings->set_ttft_ms(info.ttft_ms);
  timings->set_total_ms(info.total_ms);
  timings->set_preemptions(info.preemptions);
  lock.unlock();
  r->StartWriteAndFinish(&message, grpc::WriteOptions(), grpc::Status::OK);
}

GenerateReactor::GenerateReactor(ServerContext& ctx, std::shared_ptr<Shared> shared)
    : ctx_(ctx), shared_(std::move(shared)) {}

GenerateReactor* GenerateReactor::Start(ServerContext& ctx, EngineFacade engine,
                                        const ResolvedGeneration& generation,
                                        ActiveRequest origin) {
  auto shared = std::make_shared<Shared>();
  shared->engine.emplace(std::move(engine));
  auto* reactor = new GenerateReactor(ctx, shared);
  shared->reactor = reactor;
  shared->logprobs = generation.logprobs;
  shared->predicted = !generation.prediction.empty();

  StreamingSinkOptions sink_opts;
  sink_opts.stop = generation.stop;
  sink_opts.logprobs = true;  // the per-token records carry the ids each message reports
  sink_opts.visible_special = generation.visible_special;
  if (generation.chat) shared->parser.emplace(generation.output);
  std::weak_ptr<Shared> weak = shared;
  shared->sink = shared->engine->MakeSink(std::move(sink_opts), &ctx.metrics, [weak] {
    if (auto s = weak.lock()) s->Pump();
  });

  Status st = shared->engine->Submit(generation, {shared->sink});
  if (!st.ok()) {
    const grpc::Status status = ToGrpcStatus(st);
    ctx.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->finishing = true;
    }
    reactor->Finish(status);
    return reactor;
  }
  origin.max_tokens = generation.max_tokens;
  origin.prompt = generation.prompt;
  origin.sinks = {shared->sink};
  if (origin.frontend.empty()) origin.frontend = "grpc";
  auto ticket = ctx.requests.Register(std::move(origin));
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    if (shared->reactor != nullptr) shared->ticket = std::move(ticket);
  }
  return reactor;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* GenerateReactor::Fail(ServerContext& ctx,
                                                                      const grpc::Status& status) {
  ctx.metrics.RecordResponse("grpc", GrpcCodeName(status.error_code()));
  return new FailedReactor(status);
}

void GenerateReactor::OnWriteDone(bool ok) {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->writing = false;
    if (!ok) shared_->client_gone = true;
  }
  if (!ok) shared_->sink->Cancel();
  shared_->Pump();
}

void GenerateReactor::OnCancel() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->client_gone = true;
  }
  // The scheduler sees this at its next step and frees the blocks; the RPC ends now.
  shared_->sink->Cancel();
  shared_->Pump();
}

void GenerateReactor::OnDone() {
  RequestRegistry::Ticket ticket;
  // Let go of the model here, on gRPC's thread: were the sink's callback (on the scheduler's
  // step thread) the last holder of a model a reload replaced, its scheduler would be destroyed
  // by its own thread. The scheduler goes before the tokenizer the sink uses.
  std::optional<EngineFacade> engine;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->reactor = nullptr;
    ticket = std::move(shared_->ticket);
    engine.swap(shared_->engine);
  }
  delete this;
}

}  // namespace sparrow::server
