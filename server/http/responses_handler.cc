#include "server/http/responses_handler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/chat/random_id.h"
#include "server/core/engine_facade.h"
#include "server/http/generation_handler.h"
#include "server/http/http_status.h"
#include "server/http/prepare_pool.h"
#include "server/http/responses_output.h"
#include "server/http/responses_request.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's: the client left before the answer

struct Prepared {
  PreparedResponse prep;
  GenerationError err;
  bool ok = false;
};

// One response being generated.
struct Job {
  explicit Job(EngineFacade e) : engine(std::move(e)) {}

  EngineFacade engine;  // first: outlives the sink, which uses its tokenizer
  PreparedResponse prep;
  std::shared_ptr<Wakeup> wakeup;
  std::shared_ptr<StreamingSink> sink;
  RequestRegistry::Ticket ticket;
};

asio::awaitable<bool> Reply(HttpExchange& ex, HttpResponse res) {
  co_return co_await WriteResponse(ex.stream, std::move(res), ex.log, ex.opts.write_timeout);
}

// The events as SSE: "event: <type>" then the JSON, as OpenAI streams them (no [DONE]).
std::string EventBytes(const ResponseAssembler::Events& events) {
  std::string out;
  for (const json& e : events) {
    out += "event: " + e["type"].get<std::string>() + "\ndata: " + openai::Dump(e) + "\n\n";
  }
  return out;
}

asio::awaitable<bool> WriteEvents(HttpStream& stream, const ResponseAssembler::Events& events,
                                  bool chunked, std::chrono::milliseconds timeout) {
  if (events.empty()) co_return true;
  co_return co_await WriteEventBytes(stream, EventBytes(events), chunked, timeout);
}

// Submits the one generation; on refusal fills `*error`.
bool Submit(HttpExchange& ex, Job* job, HttpResponse* error) {
  GenerationLimits limits;
  limits.max_pending_chunks = ex.opts.max_pending_chunks;
  limits.max_buffered_bytes = ex.opts.max_buffered_bytes;
  SubmittedChoices submitted;
  if (!SubmitChoices(ex, job->engine, job->prep.gen, job->prep.request.gen.stream, limits,
                     job->wakeup, &submitted, error)) {
    return false;
  }
  job->sink = submitted.sinks.at(0);
  job->ticket = std::move(submitted.ticket);
  return true;
}

ResponseEnd EndOf(const Job& job, const ResponseAssembler& assembler, RequestLog* log) {
  const FinishInfo& f = job.sink->finish_info();
  ResponseEnd end;
  end.finish_reason = job.sink->finish_reason();
  end.input_tokens = static_cast<int64_t>(job.prep.gen.prompt.size());
  end.cached_tokens = f.cached_prompt_tokens;
  end.output_tokens = f.completion_tokens;
  // The reasoning's tokens, counted again from its text: the sink reports text, not which
  // token made which part.
  if (!assembler.reasoning_text().empty()) {
    end.reasoning_tokens = std::min<int64_t>(
        end.output_tokens,
        static_cast<int64_t>(job.engine.Tokenize(assembler.reasoning_text(), false, false).size()));
  }
  log->prompt_tokens = end.input_tokens;
  log->completion_tokens = end.output_tokens;
  log->cached_tokens = end.cached_tokens;
  log->ttft_ms = f.ttft_ms;
  log->finish_reason = end.finish_reason;
  return end;
}

// Keeps the response and the conversation it ends, for previous_response_id and GET.
void Store(HttpExchange& ex, const Job& job, const ResponseAssembler& assembler) {
  if (!job.prep.request.store) return;
  json conversation = job.prep.conversation;
  for (const json& item : assembler.output()) conversation.push_back(item);
  StoredResponse stored{openai::Dump(assembler.response()), openai::Dump(conversation)};
  const std::string id = assembler.response()["id"].get<std::string>();
  if (!ex.ctx.responses->Put(id, std::move(stored))) {
    spdlog::warn("response {} is larger than the whole response store; not kept", id);
  }
}

asio::awaitable<bool> Run(HttpExchange& ex, Job& job) {
  RequestLog* log = ex.log;
  const bool stream = job.prep.request.gen.stream;
  const bool chunked = ex.req.version() >= 11;
  const auto timeout = ex.opts.write_timeout;
  ResponseAssembler assembler("resp_" + RandomAlnum(24), job.engine.model_id(), job.prep.request);
  ChatOutputParser parser(job.prep.gen.output);
  if (stream) {
    const ResponseAssembler::Events start = assembler.Start();
    if (!co_await StartEventStream(ex.stream, ex.req, job.ticket.id(), log, timeout) ||
        !co_await WriteEvents(ex.stream, start, chunked, timeout)) {
      job.sink->Cancel();
      co_return false;
    }
  }
  auto next_check = std::chrono::steady_clock::now() + kPoll;
  for (;;) {
    std::vector<StreamChunk> chunks;
    const bool finished = job.sink->Drain(&chunks);
    ResponseAssembler::Events events;
    for (const StreamChunk& c : chunks) {
      for (json& e : assembler.Push(parser.Push(c.text))) events.push_back(std::move(e));
    }
    if (stream && !co_await WriteEvents(ex.stream, events, chunked, timeout)) {
      job.sink->Cancel();  // the client went away: free its KV blocks
      co_return false;
    }
    if (finished) break;
    if (!stream && std::chrono::steady_clock::now() >= next_check) {
      // Nothing is written until the end, so a client that gave up is only seen by looking.
      if (ex.stream.PeerClosed()) {
        job.sink->Cancel();
        log->status = kClientClosedRequest;
        log->finish_reason = "cancelled";
        co_return false;
      }
      next_check = std::chrono::steady_clock::now() + kPoll;
    }
    if (chunks.empty()) co_await job.wakeup->Wait(kPoll);
  }
  const FinishInfo& f = job.sink->finish_info();
  ResponseAssembler::Events events;
  const ResponseEnd end = EndOf(job, assembler, log);
  if (f.reason == FinishReason::kError) {
    if (!stream) {
      co_return co_await Reply(
          ex, ErrorResponse(ex.req, http::status::internal_server_error, f.status.message()));
    }
    events = assembler.Fail(f.status.message());
  } else {
    events = assembler.Push(parser.Finish());  // what the parser held back
    for (json& e : assembler.Finish(end)) events.push_back(std::move(e));
    Store(ex, job, assembler);
  }
  if (!stream) {
    HttpResponse res =
        JsonTextResponse(ex.req, http::status::ok, openai::Dump(assembler.response()));
    res.set("X-Request-Id", job.ticket.id());
    co_return co_await Reply(ex, std::move(res));
  }
  if (!co_await WriteEvents(ex.stream, events, chunked, timeout)) co_return false;
  if (!chunked) co_return false;  // closing the connection ends the body
  co_return co_await EndChunkedBody(ex.stream, timeout);
}

asio::awaitable<bool> CreateResponse(HttpExchange& ex) {
  Job job(ex.ctx.engine());
  auto prepare = [engine = job.engine, store = ex.ctx.responses, body = ex.req.body()] {
    Prepared out;
    out.ok = PrepareResponse(engine, *store, body, &out.prep, &out.err);
    return out;
  };
  Prepared p = co_await RunOnPreparePool(ex, prepare);
  if (!p.ok) {
    co_return co_await Reply(ex, ErrorResponse(ex.req, HttpStatusFor(p.err.status.code()),
                                               p.err.status.message(), p.err.param, p.err.code));
  }
  job.prep = std::move(p.prep);
  ex.log->stream = job.prep.request.gen.stream;
  ex.log->model = job.engine.model_id();
  job.wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  HttpResponse error;
  if (!Submit(ex, &job, &error)) co_return co_await Reply(ex, std::move(error));
  co_return co_await Run(ex, job);
}

std::string IdOf(const HttpExchange& ex) {
  return std::string(ex.path.substr(std::string_view("/v1/responses/").size()));
}

HttpResponse NotFoundResponse(const HttpExchange& ex, const std::string& id) {
  return ErrorResponse(ex.req, http::status::not_found, "Response with id '" + id + "' not found.",
                       "response_id", "response_not_found");
}

asio::awaitable<bool> GetResponse(HttpExchange& ex) {
  const std::string id = IdOf(ex);
  auto stored = ex.ctx.responses->Get(id);
  if (stored == nullptr) co_return co_await Reply(ex, NotFoundResponse(ex, id));
  co_return co_await Reply(ex, JsonTextResponse(ex.req, http::status::ok, stored->response));
}

asio::awaitable<bool> DeleteResponse(HttpExchange& ex) {
  const std::string id = IdOf(ex);
  if (!ex.ctx.responses->Erase(id)) co_return co_await Reply(ex, NotFoundResponse(ex, id));
  const json body = {{"id", id}, {"object", "response.deleted"}, {"deleted", true}};
  co_return co_await Reply(ex, JsonResponse(ex.req, http::status::ok, body));
}

}  // namespace

void AddResponsesRoutes(HttpRouter& r) {
  r.Add({http::verb::post, "/v1/responses", AuthScope::kApiKey, CreateResponse});
  r.Add({http::verb::get, "/v1/responses/", AuthScope::kApiKey, GetResponse});
  r.Add({http::verb::delete_, "/v1/responses/", AuthScope::kApiKey, DeleteResponse});
}

}  // namespace sparrow::server
