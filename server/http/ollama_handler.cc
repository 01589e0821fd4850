#include "server/http/ollama_handler.h"

#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <optional>

#include "api/ollama/ollama_request.h"
#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/http/generation_handler.h"
#include "server/http/ollama_embed.h"
#include "server/http/ollama_generation.h"
#include "server/http/ollama_models.h"
#include "server/http/ollama_response.h"
#include "server/http/prepare_pool.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's: the client left before the answer

struct Prepared {
  std::optional<EngineFacade> engine;
  PreparedOllama prep;
  GenerationError err;
  bool ok = false;
};

// One generation of /api/chat or /api/generate.
struct Job {
  explicit Job(std::optional<EngineFacade> e) : engine(std::move(e)) {}

  std::optional<EngineFacade> engine;  // first: outlives the sink, which uses its tokenizer
  PreparedOllama prep;
  std::shared_ptr<Wakeup> wakeup;
  std::shared_ptr<StreamingSink> sink;
  RequestRegistry::Ticket ticket;
  Clock::time_point start = Clock::now();
};

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

// The scheduler's refusal (SubmitChoices answers in OpenAI's shape) in Ollama's.
HttpResponse AsOllamaError(const HttpExchange& ex, HttpResponse openai_error) {
  const json body = json::parse(openai_error.body(), nullptr, /*allow_exceptions=*/false);
  std::string message = "the request was refused";
  if (body.is_object() && body.contains("error") && body["error"].is_object() &&
      body["error"].value("message", json()).is_string()) {
    message = body["error"]["message"].get<std::string>();
  }
  HttpResponse res = OllamaError(ex.req, openai_error.result(), message);
  if (auto it = openai_error.find(http::field::retry_after); it != openai_error.end()) {
    res.set(http::field::retry_after, it->value());
  }
  return res;
}

bool Submit(HttpExchange& ex, Job* job, HttpResponse* error) {
  GenerationLimits limits;
  limits.max_pending_chunks = ex.opts.max_pending_chunks;
  limits.max_buffered_bytes = ex.opts.max_buffered_bytes;
  SubmittedChoices submitted;
  if (!SubmitChoices(ex, *job->engine, job->prep.gen, job->prep.stream, limits, job->wakeup,
                     &submitted, error)) {
    *error = AsOllamaError(ex, std::move(*error));
    return false;
  }
  job->sink = submitted.sinks.at(0);
  job->ticket = std::move(submitted.ticket);
  return true;
}

int64_t Nanos(double ms) {
  return static_cast<int64_t>(ms * 1e6);
}

OllamaTimings TimingsOf(const Job& job, RequestLog* log) {
  const FinishInfo& f = job.sink->finish_info();
  OllamaTimings t;
  t.total_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - job.start).count();
  t.load_ns = Nanos(job.prep.load_ms);
  t.prompt_eval_count = static_cast<int64_t>(job.prep.gen.prompt.size());
  t.prompt_eval_ns = Nanos(std::max(0.0, f.ttft_ms - f.queue_ms));
  t.eval_count = f.completion_tokens;
  t.eval_ns = Nanos(std::max(0.0, f.total_ms - f.ttft_ms));
  log->prompt_tokens = t.prompt_eval_count;
  log->completion_tokens = f.completion_tokens;
  log->cached_tokens = f.cached_prompt_tokens;
  log->ttft_ms = f.ttft_ms;
  log->finish_reason = job.sink->finish_reason();
  return t;
}

// The text of a chunk as the client sees it: through the chat parser (thinking, tool calls),
// or as it is for a raw prompt.
ChatDelta Read(std::optional<ChatOutputParser>& parser, const std::string& text) {
  if (parser) return parser->Push(text);
  ChatDelta d;
  d.content = text;
  return d;
}

asio::awaitable<bool> WriteLine(HttpExchange& ex, const json& j, bool chunked) {
  co_return co_await WriteEventBytes(ex.stream, openai::Dump(j) + "\n", chunked,
                                     ex.opts.write_timeout);
}

asio::awaitable<bool> Run(HttpExchange& ex, Job& job) {
  RequestLog* log = ex.log;
  const bool stream = job.prep.stream;
  const bool chat = job.prep.chat;
  const bool chunked = ex.req.version() >= 11;
  const std::string& model = job.prep.model;
  std::optional<ChatOutputParser> parser;
  if (job.prep.gen.chat) parser.emplace(job.prep.gen.output);
  if (stream && !co_await StartEventStream(ex.stream, ex.req, job.ticket.id(), log,
                                           ex.opts.write_timeout, "application/x-ndjson")) {
    job.sink->Cancel();
    co_return false;
  }
  ChatDelta all;  // a whole answer (not streaming)
  auto next_check = Clock::now() + kPoll;
  for (;;) {
    std::vector<StreamChunk> chunks;
    const bool finished = job.sink->Drain(&chunks);
    for (const StreamChunk& c : chunks) {
      ChatDelta d = Read(parser, c.text);
      if (!stream) {
        all = Concat(std::move(all), d);
      } else if (!d.empty() && !co_await WriteLine(ex, OllamaChunk(chat, model, d), chunked)) {
        job.sink->Cancel();  // the client went away: free its KV blocks
        co_return false;
      }
    }
    if (finished) break;
    if (!stream && Clock::now() >= next_check) {
      // Nothing is written until the end, so a client that gave up is only seen by looking.
      if (ex.stream.PeerClosed()) {
        job.sink->Cancel();
        log->status = kClientClosedRequest;
        log->finish_reason = "cancelled";
        co_return false;
      }
      next_check = Clock::now() + kPoll;
    }
    if (chunks.empty()) co_await job.wakeup->Wait(kPoll);
  }
  const FinishInfo& f = job.sink->finish_info();
  const OllamaTimings timings = TimingsOf(job, log);
  if (f.reason == FinishReason::kError) {
    if (!stream) {
      co_return co_await Reply(
          ex, OllamaError(ex.req, http::status::internal_server_error, f.status.message()));
    }
    json failed = json::object();
    failed["error"] = f.status.message();  // the stream's last line says why it ends
    if (!co_await WriteLine(ex, failed, chunked)) co_return false;
  } else {
    ChatDelta rest = parser ? parser->Finish() : ChatDelta();  // what the parser held back
    if (!stream) {
      const json done = OllamaDone(chat, model, Concat(std::move(all), rest),
                                   job.sink->finish_reason(), &timings);
      HttpResponse res = JsonResponse(ex.req, http::status::ok, done);
      res.set("X-Request-Id", job.ticket.id());
      co_return co_await Reply(ex, std::move(res));
    }
    if (!rest.empty() && !co_await WriteLine(ex, OllamaChunk(chat, model, rest), chunked)) {
      co_return false;
    }
    const json done = OllamaDone(chat, model, ChatDelta(), job.sink->finish_reason(), &timings);
    if (!co_await WriteLine(ex, done, chunked)) co_return false;
  }
  if (!chunked) co_return false;  // closing the connection ends the body
  co_return co_await EndChunkedBody(ex.stream, ex.opts.write_timeout);
}

// A request with no prompt: Ollama's way to load a model, or with keep_alive 0 to unload it.
asio::awaitable<bool> LoadOnly(HttpExchange& ex, const PreparedOllama& prep) {
  std::string reason = "load";
  if (prep.keep_alive_s && *prep.keep_alive_s == 0) {
    if (ex.ctx.switcher) {
      // At once when idle (the next ps shows it gone), else once its requests are done.
      const std::string name = ollama::ModelName(prep.model);
      auto unload = [ctx = &ex.ctx, name] { return ctx->switcher->SleepNow(name); };
      const Status now = co_await RunOnPreparePool(ex, unload);
      if (!now.ok()) ex.ctx.switcher->SleepWhenIdle(name);
    }
    reason = "unload";
  }
  const json body = OllamaDone(prep.chat, prep.model, ChatDelta(), reason, nullptr);
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

HttpHandler Generation(bool chat) {
  return [chat](HttpExchange& ex) -> asio::awaitable<bool> {
    const Clock::time_point start = Clock::now();
    // Parsing, the model loading on demand and the template run on the preparation pool.
    auto prepare = [ctx = &ex.ctx, chat, body = ex.req.body()] {
      Prepared out;
      out.ok = PrepareOllamaGeneration(*ctx, chat, body, &out.engine, &out.prep, &out.err);
      return out;
    };
    Prepared p = co_await RunOnPreparePool(ex, prepare);
    if (!p.ok) co_return co_await Reply(ex, OllamaRefusal(ex.req, p.err));
    ex.log->model = p.prep.model;
    if (p.prep.load_only) co_return co_await LoadOnly(ex, p.prep);
    const bool unload_after = p.prep.keep_alive_s && *p.prep.keep_alive_s == 0;
    const std::string model = ollama::ModelName(p.prep.model);
    bool keep_alive = false;
    {
      Job job(std::move(p.engine));
      job.start = start;
      job.prep = std::move(p.prep);
      ex.log->stream = job.prep.stream;
      job.wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
      HttpResponse error;
      if (!Submit(ex, &job, &error)) co_return co_await Reply(ex, std::move(error));
      keep_alive = co_await Run(ex, job);
    }  // the job, and its hold on the model, ends here
    // keep_alive 0 on a generation: unloaded once idle after this answer.
    if (unload_after && ex.ctx.switcher) ex.ctx.switcher->SleepWhenIdle(model);
    co_return keep_alive;
  };
}

}  // namespace

void AddOllamaRoutes(HttpRouter& r) {
  r.Add({http::verb::post, "/api/chat", AuthScope::kApiKey, Generation(true)});
  r.Add({http::verb::post, "/api/generate", AuthScope::kApiKey, Generation(false)});
  AddOllamaEmbedRoutes(r);
  AddOllamaModelRoutes(r);
}

}  // namespace sparrow::server
