#include "server/http/embeddings_handler.h"

#include <boost/asio/this_coro.hpp>
#include <charconv>

#include "api/openai/openai_embeddings.h"
#include "api/openai/openai_types.h"
#include "server/core/engine_facade.h"
#include "server/http/embedding_job_http.h"
#include "server/http/http_status.h"
#include "server/http/prepare_pool.h"
#include "server/http/wakeup.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's convention, as for generations

// The request's JSON in engine terms; false with `*error` filled.
bool ToSpec(const std::string& body, EmbeddingSpec* spec, bool* base64, GenerationError* error) {
  auto r = ParseOpenAiBody(body, &openai::ParseEmbeddingsRequest, error);
  if (!r) return false;
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

}  // namespace

asio::awaitable<EmbeddingRun> RunEmbedding(HttpExchange& ex, const EmbeddingSpec& spec,
                                           EngineLookup lookup) {
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  // The model named is looked up (and loaded when it is not) and every input tokenized on the
  // preparation pool, never on an io thread.
  auto start = [lookup = std::move(lookup), spec, wakeup] {
    EmbeddingRun run;
    Result<EngineFacade> engine = lookup(spec.model);
    if (!engine.ok()) {
      run.error = {engine.status(), spec.fields.model, ModelErrorCode(engine.status())};
      return run;
    }
    run.engine = std::move(engine).value();
    run.job = run.engine->Embed(
        spec, [wakeup] { wakeup->Notify(); }, &run.error);
    return run;
  };
  EmbeddingRun run = co_await RunOnPreparePool(ex, start);
  if (run.job == nullptr) co_return run;
  auto next_check = std::chrono::steady_clock::now() + kPoll;
  while (!run.job->done()) {
    if (std::chrono::steady_clock::now() >= next_check) {
      if (ex.stream.PeerClosed()) {
        run.job->Cancel();
        run.client_left = true;
        co_return run;
      }
      next_check = std::chrono::steady_clock::now() + kPoll;
    }
    co_await wakeup->Wait(kPoll);
  }
  if (Status st = run.job->status(); !st.ok()) run.error = {st, "", ""};
  co_return run;
}

asio::awaitable<bool> HandleEmbeddings(HttpExchange& ex) {
  const HttpRequest& req = ex.req;
  RequestLog* log = ex.log;
  const auto timeout = ex.opts.write_timeout;
  EmbeddingSpec spec;
  bool base64 = false;
  GenerationError err;
  if (!ToSpec(req.body(), &spec, &base64, &err)) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(req, err, false), log, timeout);
  }
  auto lookup = [ctx = &ex.ctx](const std::string& model) { return ctx->EngineFor(model); };
  EmbeddingRun run = co_await RunEmbedding(ex, spec, lookup);
  if (run.engine) log->model = run.engine->model_id();
  if (run.job) {
    log->prompt_tokens = run.job->prompt_tokens();
    log->cached_tokens = run.job->cached_tokens();
  }
  if (run.client_left) {
    log->status = kClientClosedRequest;
    log->finish_reason = "cancelled";
    co_return false;
  }
  if (!run.error.status.ok()) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(req, run.error, ex.ctx.draining.load()),
                                     log, timeout);
  }
  std::string body = ResponseText(run.engine->model_id(), run.job->TakeVectors(), base64,
                                  run.job->prompt_tokens());
  co_return co_await WriteResponse(
      ex.stream, JsonTextResponse(req, http::status::ok, std::move(body)), log, timeout);
}

}  // namespace sparrow::server
