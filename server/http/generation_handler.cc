#include "server/http/generation_handler.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <optional>

#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/http/generation_request.h"
#include "server/http/http_status.h"
#include "server/http/openai_response.h"
#include "server/http/prepare_pool.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(250);
// Logged for a request whose client left before the answer (nginx's convention).
constexpr int kClientClosedRequest = 499;

// The n generations of one HTTP request.
struct Job {
  explicit Job(const ServerContext& ctx) : engine(nullptr, &ctx) {}

  // The model it runs on (the one the body names, set by Prepare), kept until the sinks (which
  // use its tokenizer) are gone: first, so it is destroyed last.
  EngineFacade engine;
  PreparedGeneration prep;
  ResponseMeta meta;
  std::shared_ptr<Wakeup> wakeup;
  std::vector<std::shared_ptr<StreamingSink>> sinks;
  std::vector<ChatOutputParser> parsers;  // chat: one per choice
  RequestRegistry::Ticket ticket;

  void CancelAll() {
    for (auto& s : sinks) s->Cancel();
  }
};

// The token pieces the logprobs name, from the request's model.
TokenPieceFn PiecesOf(const EngineFacade& engine) {
  return [&engine](int32_t id) { return engine.TokenPiece(id); };
}

// Submits every choice as one group; on refusal fills the error response.
bool SubmitAll(HttpExchange& ex, const GenerationLimits& limits, Job* job, HttpResponse* error) {
  SubmittedChoices submitted;
  if (!SubmitChoices(ex, job->engine, job->prep.gen, job->prep.stream, limits, job->wakeup,
                     &submitted, error)) {
    return false;
  }
  job->ticket = std::move(submitted.ticket);
  job->sinks = std::move(submitted.sinks);
  if (job->prep.gen.chat) {
    job->parsers.assign(job->sinks.size(), ChatOutputParser(job->prep.gen.output));
  }
  return true;
}

// OpenAI's finish_reason "tool_calls" for an answer that ended by itself with calls in it.
std::string ChoiceFinishReason(const Job& job, size_t i) {
  std::string reason = job.sinks[i]->finish_reason();
  if (reason == "stop" && !job.parsers.empty() && job.parsers[i].calls() > 0) return "tool_calls";
  return reason;
}

void NoteUsage(const Job& job, RequestLog* log) {
  log->prompt_tokens = static_cast<int64_t>(job.prep.gen.prompt.size());
  log->completion_tokens = 0;
  for (const auto& s : job.sinks) log->completion_tokens += s->finish_info().completion_tokens;
  if (!job.sinks.empty()) {
    log->ttft_ms = job.sinks[0]->finish_info().ttft_ms;
    log->cached_tokens = job.sinks[0]->finish_info().cached_prompt_tokens;
    log->finish_reason = job.sinks[0]->finish_reason();
  }
}

// Predicted Outputs' counts over the choices; nullopt when the request had no prediction.
std::optional<PredictionUsage> PredictionUsageOf(const Job& job) {
  if (job.prep.gen.prediction.empty()) return std::nullopt;
  PredictionUsage u;
  for (const auto& s : job.sinks) {
    u.accepted += s->finish_info().accepted_prediction_tokens;
    u.rejected += s->finish_info().rejected_prediction_tokens;
  }
  return u;
}

asio::awaitable<bool> Collect(HttpStream& stream, const HttpRequest& req,
                              const GenerationLimits& limits, Job& job, RequestLog* log) {
  std::vector<ChoiceResult> results(job.sinks.size());
  auto next_check = std::chrono::steady_clock::now() + kPoll;
  for (;;) {
    bool all_done = true;
    for (size_t i = 0; i < job.sinks.size(); ++i) {
      std::vector<StreamChunk> chunks;
      all_done &= job.sinks[i]->Drain(&chunks);
      for (auto& c : chunks) {
        results[i].text += c.text;
        for (auto& t : c.tokens) results[i].tokens.push_back(std::move(t));
      }
    }
    if (all_done) break;
    if (std::chrono::steady_clock::now() >= next_check) {
      // Nothing is written until the end, so a client that gave up is only seen by looking.
      if (stream.PeerClosed()) {
        job.CancelAll();
        NoteUsage(job, log);
        log->status = kClientClosedRequest;
        log->finish_reason = "cancelled";
        co_return false;
      }
      next_check = std::chrono::steady_clock::now() + kPoll;
    }
    co_await job.wakeup->Wait(kPoll);
  }
  NoteUsage(job, log);
  for (size_t i = 0; i < job.sinks.size(); ++i) {
    const FinishInfo& f = job.sinks[i]->finish_info();
    if (f.reason == FinishReason::kError) {
      co_return co_await WriteResponse(
          stream, ErrorResponse(req, http::status::internal_server_error, f.status.message()), log,
          limits.write_timeout);
    }
    if (!job.parsers.empty()) {
      ChatOutputParser& parser = job.parsers[i];
      ChatDelta all = parser.Push(results[i].text);
      all = Concat(std::move(all), parser.Finish());  // after Push: what it held back
      results[i].text = std::move(all.content);
      results[i].reasoning = std::move(all.reasoning);
      results[i].tool_calls = std::move(all.tool_calls);
    }
    // Cancelled by a shutdown: what was generated goes out, finish_reason "cancelled".
    results[i].finish_reason = ChoiceFinishReason(job, i);
    if (!job.prep.echo_text.empty()) results[i].text = job.prep.echo_text + results[i].text;
  }
  // Written as text: a document of n choices' top logprobs would be millions of small nodes.
  const std::optional<PredictionUsage> prediction = PredictionUsageOf(job);
  std::string body =
      FullResponseText(job.meta, results, job.prep.gen.logprobs, job.prep.gen.top_logprobs,
                       PiecesOf(job.engine), log->prompt_tokens, log->completion_tokens,
                       log->cached_tokens, prediction ? &*prediction : nullptr);
  results = {};  // what it was written from
  HttpResponse res = JsonTextResponse(req, http::status::ok, std::move(body));
  res.set("X-Request-Id", job.ticket.id());
  co_return co_await WriteResponse(stream, std::move(res), log, limits.write_timeout);
}

// One SSE event of a generation stream.
asio::awaitable<bool> WriteEvent(HttpStream& stream, const std::string& payload, bool chunked,
                                 std::chrono::milliseconds timeout) {
  co_return co_await WriteEventBytes(stream, "data: " + payload + "\n\n", chunked, timeout);
}

asio::awaitable<bool> Stream(HttpStream& stream, const HttpRequest& req,
                             const GenerationLimits& limits, Job& job, RequestLog* log) {
  const bool chunked = req.version() >= 11;
  if (!co_await StartEventStream(stream, req, job.ticket.id(), log, limits.write_timeout)) {
    job.CancelAll();
    co_return false;
  }
  const json null_lp = nullptr;
  for (size_t i = 0; i < job.sinks.size(); ++i) {
    std::string first =
        job.meta.chat
            ? openai::Dump(ChunkJson(job.meta, static_cast<int>(i), "", null_lp, "", true))
            : "";
    if (!first.empty() && !co_await WriteEvent(stream, first, chunked, limits.write_timeout)) {
      job.CancelAll();
      co_return false;
    }
    if (!job.prep.echo_text.empty() &&
        !co_await WriteEvent(
            stream,
            openai::Dump(ChunkJson(job.meta, static_cast<int>(i), job.prep.echo_text, null_lp, "")),
            chunked, limits.write_timeout)) {
      job.CancelAll();
      co_return false;
    }
  }
  std::vector<size_t> offsets(job.sinks.size(), 0);
  std::vector<bool> done(job.sinks.size(), false);
  size_t n_done = 0;
  while (n_done < job.sinks.size()) {
    bool progressed = false;
    for (size_t i = 0; i < job.sinks.size(); ++i) {
      if (done[i]) continue;
      std::vector<StreamChunk> chunks;
      const bool finished = job.sinks[i]->Drain(&chunks);
      for (const auto& c : chunks) {
        const json lp = job.prep.gen.logprobs
                            ? LogprobsJson(job.meta.chat, c.tokens, job.prep.gen.top_logprobs,
                                           PiecesOf(job.engine), offsets[i])
                            : null_lp;
        offsets[i] += c.text.size();
        std::vector<json> events;
        if (job.parsers.empty()) {
          events.push_back(ChunkJson(job.meta, static_cast<int>(i), c.text, lp, ""));
        } else {
          events = ChatDeltaChunks(job.meta, static_cast<int>(i), job.parsers[i].Push(c.text), lp);
        }
        for (const json& e : events) {
          if (!co_await WriteEvent(stream, openai::Dump(e), chunked, limits.write_timeout)) {
            job.CancelAll();  // the client went away: free its KV blocks
            co_return false;
          }
        }
        progressed = true;
      }
      if (finished) {
        done[i] = true;
        ++n_done;
        const FinishInfo& f = job.sinks[i]->finish_info();
        if (!job.parsers.empty() && f.reason != FinishReason::kError) {
          // Text held back in case it began a tool call or a marker goes out now.
          for (const json& e :
               ChatDeltaChunks(job.meta, static_cast<int>(i), job.parsers[i].Finish(), null_lp)) {
            if (!co_await WriteEvent(stream, openai::Dump(e), chunked, limits.write_timeout)) {
              job.CancelAll();
              co_return false;
            }
          }
        }
        std::string payload =
            f.reason == FinishReason::kError
                ? openai::Dump(openai::ErrorBody(f.status.message(), "server_error"))
                : openai::Dump(ChunkJson(job.meta, static_cast<int>(i), "", null_lp,
                                         ChoiceFinishReason(job, i)));
        if (!co_await WriteEvent(stream, payload, chunked, limits.write_timeout)) {
          job.CancelAll();
          co_return false;
        }
        progressed = true;
      }
    }
    if (!progressed) co_await job.wakeup->Wait(kPoll);
  }
  NoteUsage(job, log);
  if (job.prep.include_usage) {
    json usage = ChunkJson(job.meta, 0, "", null_lp, "");
    usage["choices"] = json::array();
    const std::optional<PredictionUsage> prediction = PredictionUsageOf(job);
    usage["usage"] = UsageJson(log->prompt_tokens, log->completion_tokens, log->cached_tokens,
                               prediction ? &*prediction : nullptr);
    if (!co_await WriteEvent(stream, openai::Dump(usage), chunked, limits.write_timeout)) {
      co_return false;
    }
  }
  if (!co_await WriteEvent(stream, "[DONE]", chunked, limits.write_timeout)) co_return false;
  if (!chunked) co_return false;  // closing the connection ends the body
  co_return co_await EndChunkedBody(stream, limits.write_timeout);
}

// PrepareGeneration on the server's preparation pool, while this coroutine waits without holding
// its io thread.
asio::awaitable<bool> Prepare(HttpExchange& ex, bool chat, Job& job, GenerationError* err) {
  struct Prepared {
    std::optional<EngineFacade> engine;
    PreparedGeneration prep;
    GenerationError err;
    bool ok = false;
  };
  // There the model the body names is loaded when it is not (models_dir), which may take a
  // while: never on an io thread. The body is copied: the connection may be dropped (and the
  // request freed) at shutdown while the preparation runs.
  auto prepare = [ctx = &ex.ctx, chat, body = ex.req.body()] {
    Prepared out;
    out.engine.emplace(nullptr, ctx);
    out.ok = PrepareGeneration(*ctx, chat, body, &*out.engine, &out.prep, &out.err);
    return out;
  };
  Prepared p = co_await RunOnPreparePool(ex, prepare);
  if (p.engine) job.engine = std::move(*p.engine);
  job.prep = std::move(p.prep);
  *err = std::move(p.err);
  co_return p.ok;
}

}  // namespace

bool SubmitChoices(HttpExchange& ex, const EngineFacade& engine, const ResolvedGeneration& g,
                   bool stream, const GenerationLimits& limits, std::shared_ptr<Wakeup> wakeup,
                   SubmittedChoices* out, HttpResponse* error) {
  ServerContext& ctx = ex.ctx;
  std::vector<std::shared_ptr<StreamingSink>> sinks;
  for (int32_t i = 0; i < g.n; ++i) {
    StreamingSinkOptions so;
    so.stop = g.stop;
    so.logprobs = g.logprobs;
    so.visible_special = g.visible_special;
    so.max_pending_chunks = limits.max_pending_chunks;
    so.max_pending_bytes = std::max<size_t>(1, limits.max_buffered_bytes / g.n);
    sinks.push_back(engine.MakeSink(so, &ctx.metrics, [wakeup] { wakeup->Notify(); }));
  }
  Status s = engine.Submit(g, sinks);
  if (!s.ok()) {
    const bool full = s.code() == StatusCode::kResourceExhausted;
    const bool draining = s.code() == StatusCode::kUnavailable;
    *error = ErrorResponse(ex.req, HttpStatusFor(s.code()), s.message(), "",
                           full       ? "queue_full"
                           : draining ? (ctx.draining.load() ? "draining" : "memory_pressure")
                                      : "");
    if (full || draining) error->set(http::field::retry_after, "1");
    return false;
  }
  ActiveRequest active;
  active.frontend = "http";
  active.route = std::string(ex.path);
  active.remote = ex.log->remote;
  active.key_id = ex.key_id;
  active.stream = stream;
  active.max_tokens = g.max_tokens;
  active.prompt = g.prompt;
  active.sinks = sinks;
  out->ticket = ctx.requests.Register(std::move(active));
  out->sinks = std::move(sinks);
  return true;
}

asio::awaitable<bool> HandleGeneration(HttpExchange& ex, bool chat,
                                       const GenerationLimits& limits) {
  HttpStream& stream = ex.stream;
  const HttpRequest& req = ex.req;
  ServerContext& ctx = ex.ctx;
  RequestLog* log = ex.log;
  Job job(ctx);
  GenerationError err;
  if (!co_await Prepare(ex, chat, job, &err)) {
    HttpResponse res = ErrorResponse(req, HttpStatusFor(err.status.code()), err.status.message(),
                                     err.param, err.code);
    // A model still being switched to or woken: worth retrying soon.
    if (err.status.code() == StatusCode::kUnavailable) res.set(http::field::retry_after, "1");
    co_return co_await WriteResponse(stream, std::move(res), log, limits.write_timeout);
  }
  log->stream = job.prep.stream;
  log->model = job.engine.model_id();
  job.meta = MakeResponseMeta(chat, job.engine.model_id());
  job.wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  HttpResponse error;
  if (!SubmitAll(ex, limits, &job, &error))
    co_return co_await WriteResponse(stream, std::move(error), log, limits.write_timeout);
  if (job.prep.stream) co_return co_await Stream(stream, req, limits, job, log);
  co_return co_await Collect(stream, req, limits, job, log);
}

}  // namespace sparrow::server
