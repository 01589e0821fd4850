#include "server/http/embedding_job_http.h"

#include <boost/asio/this_coro.hpp>

#include "server/http/http_status.h"
#include "server/http/prepare_pool.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's convention, as for generations

}  // namespace

asio::awaitable<EmbeddingRun> RunEmbeddingJob(HttpExchange& ex, const std::string& model,
                                              const std::string& model_field,
                                              const EngineLookup& lookup, const JobStarter& start) {
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  // Copies: the pool's thread may outlive this exchange at shutdown (RunOnPreparePool).
  auto run_start = [model, model_field, lookup, start, wakeup] {
    EmbeddingRun run;
    Result<EngineFacade> engine = lookup(model);
    if (!engine.ok()) {
      run.error = {engine.status(), model_field, ModelErrorCode(engine.status())};
      return run;
    }
    run.engine = std::move(engine).value();
    run.job = start(
        *run.engine, [wakeup] { wakeup->Notify(); }, &run.error);
    return run;
  };
  EmbeddingRun run = co_await RunOnPreparePool(ex, run_start);
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

asio::awaitable<bool> WriteEmbeddingRun(HttpExchange& ex, EmbeddingRun& run,
                                        const JobAnswer& answer) {
  const auto timeout = ex.opts.write_timeout;
  if (run.engine) ex.log->model = run.engine->model_id();
  if (run.job) {
    ex.log->prompt_tokens = run.job->prompt_tokens();
    ex.log->cached_tokens = run.job->cached_tokens();
  }
  if (run.client_left) {
    ex.log->status = kClientClosedRequest;
    ex.log->finish_reason = "cancelled";
    co_return false;
  }
  if (!run.error.status.ok()) {
    co_return co_await WriteResponse(
        ex.stream, JobRefusal(ex.req, run.error, ex.ctx.draining.load()), ex.log, timeout);
  }
  co_return co_await WriteResponse(
      ex.stream, JsonTextResponse(ex.req, http::status::ok, answer(*run.engine, *run.job)), ex.log,
      timeout);
}

HttpResponse JobRefusal(const HttpRequest& req, const GenerationError& err, bool draining) {
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

}  // namespace sparrow::server
