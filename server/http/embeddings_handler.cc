#include "server/http/embeddings_handler.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <charconv>

#include "api/openai/openai_embeddings.h"
#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/http/http_status.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's convention, as for generations

// The request's JSON in engine terms; false with `*error` filled.
bool ToSpec(const std::string& body, EmbeddingSpec* spec, bool* base64, GenerationError* error) {
  std::string param;
  auto json = openai::ParseRequestBody(body, &param);
  if (!json.ok()) {
    error->status = json.status();
    error->param = param;
    return false;
  }
  auto r = openai::ParseEmbeddingsRequest(*json, &param);
  if (!r.ok()) {
    error->status = r.status();
    error->param = param;
    return false;
  }
  spec->model = std::move(r->model);
  spec->texts = std::move(r->texts);
  spec->token_lists = std::move(r->token_lists);
  spec->dimensions = r->dimensions;
  *base64 = r->base64;
  if (!r->pooling.empty()) {
    spec->pooling = PoolingFromName(r->pooling);
    if (!spec->pooling) {
      error->status =
          InvalidArgument("'pooling' must be mean, cls or last, got '" + r->pooling + "'");
      error->param = "pooling";
      return false;
    }
  }
  return true;
}

// The answer, written as text: a request of 2048 inputs is millions of numbers, too many for a
// JSON document of nodes. Floats in their shortest exact form.
std::string ResponseText(const std::string& model, const std::vector<std::vector<float>>& vectors,
                         bool base64, int64_t prompt_tokens) {
  std::string out = R"({"object":"list","data":[)";
  char buf[32];
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64) {
      out += '"' + openai::Base64Floats(vectors[i]) + '"';
    } else {
      out += '[';
      for (size_t k = 0; k < vectors[i].size(); ++k) {
        if (k > 0) out += ',';
        const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), vectors[i][k]);
        out.append(buf, ec == std::errc() ? end : buf);
      }
      out += ']';
    }
    out += '}';
  }
  out += R"(],"model":)" + nlohmann::json(model).dump() + R"(,"usage":{"prompt_tokens":)" +
         std::to_string(prompt_tokens) + R"(,"total_tokens":)" + std::to_string(prompt_tokens) +
         "}}";
  return out;
}

HttpResponse Refusal(const HttpRequest& req, const GenerationError& err, bool draining) {
  const Status& s = err.status;
  const bool full = s.code() == StatusCode::kResourceExhausted;
  const bool unavailable = s.code() == StatusCode::kUnavailable;
  HttpResponse res = ErrorResponse(req, HttpStatusFor(s.code()), s.message(), err.param,
                                   !err.code.empty() ? err.code
                                   : full            ? "queue_full"
                                   : unavailable     ? (draining ? "draining" : "")
                                                     : "");
  if (full || unavailable) res.set(http::field::retry_after, "1");
  return res;
}

// EngineFacade::Embed (tokenizing every input) on the server's preparation pool, while this
// coroutine waits without holding its io thread.
asio::awaitable<std::shared_ptr<EmbeddingJob>> Start(HttpExchange& ex, const EngineFacade& engine,
                                                     const EmbeddingSpec& spec,
                                                     std::shared_ptr<Wakeup> wakeup,
                                                     GenerationError* err) {
  auto on_ready = [wakeup] { wakeup->Notify(); };
  asio::thread_pool* pool = ex.state != nullptr ? ex.state->prepare.get() : nullptr;
  if (pool == nullptr) co_return engine.Embed(spec, on_ready, err);
  struct Handoff {
    std::shared_ptr<EmbeddingJob> job;
    GenerationError err;
    std::atomic<bool> done{false};
  };
  auto handoff = std::make_shared<Handoff>();
  asio::post(*pool, [handoff, wakeup, engine, spec, on_ready] {
    handoff->job = engine.Embed(spec, on_ready, &handoff->err);
    handoff->done.store(true, std::memory_order_release);
    wakeup->Notify();
  });
  while (!handoff->done.load(std::memory_order_acquire)) co_await wakeup->Wait(kPoll);
  *err = std::move(handoff->err);
  co_return std::move(handoff->job);
}

}  // namespace

asio::awaitable<bool> HandleEmbeddings(HttpExchange& ex) {
  const HttpRequest& req = ex.req;
  RequestLog* log = ex.log;
  const auto timeout = ex.opts.write_timeout;
  EmbeddingSpec spec;
  bool base64 = false;
  GenerationError err;
  if (!ToSpec(req.body(), &spec, &base64, &err)) {
    co_return co_await WriteResponse(ex.stream, Refusal(req, err, false), log, timeout);
  }
  // Kept until the job is done: its model holds the scheduler the inputs run on.
  const EngineFacade engine = ex.ctx.engine();
  log->model = engine.model_id();
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  std::shared_ptr<EmbeddingJob> job = co_await Start(ex, engine, spec, wakeup, &err);
  if (job == nullptr) {
    co_return co_await WriteResponse(ex.stream, Refusal(req, err, ex.ctx.draining.load()), log,
                                     timeout);
  }
  log->prompt_tokens = job->prompt_tokens();
  auto next_check = std::chrono::steady_clock::now() + kPoll;
  while (!job->done()) {
    if (std::chrono::steady_clock::now() >= next_check) {
      if (ex.stream.PeerClosed()) {
        job->Cancel();
        log->status = kClientClosedRequest;
        log->finish_reason = "cancelled";
        co_return false;
      }
      next_check = std::chrono::steady_clock::now() + kPoll;
    }
    co_await wakeup->Wait(kPoll);
  }
  log->cached_tokens = job->cached_tokens();
  if (Status st = job->status(); !st.ok()) {
    GenerationError failed{st, "", ""};
    co_return co_await WriteResponse(ex.stream, Refusal(req, failed, ex.ctx.draining.load()), log,
                                     timeout);
  }
  std::string body =
      ResponseText(engine.model_id(), job->TakeVectors(), base64, job->prompt_tokens());
  co_return co_await WriteResponse(
      ex.stream, JsonTextResponse(req, http::status::ok, std::move(body)), log, timeout);
}

}  // namespace sparrow::server
