#include "server/http/embedding_job_http.h"

#include <boost/asio/this_coro.hpp>

#include "server/http/http_status.h"
#include "server/http/prepare_pool.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's convention, as for generations

asio::awaitable<bool> AwaitEmbeddingJob(HttpExchange& ex, EmbeddingJob& job, Wakeup& wakeup) {
  auto next_check = std::chrono::steady_clock::now() + kPoll;
  while (!job.done()) {
    if (std::chrono::steady_clock::now() >= next_check) {
      if (ex.stream.PeerClosed()) {
        job.Cancel();
        ex.log->status = kClientClosedRequest;
        ex.log->finish_reason = "cancelled";
        co_return false;
      }
      next_check = std::chrono::steady_clock::now() + kPoll;
    }
    co_await wakeup.Wait(kPoll);
  }
  co_return true;
}

}  // namespace

asio::awaitable<bool> AnswerEmbeddingJob(HttpExchange& ex, const JobStarter& start,
                                         const JobAnswer& answer) {
  const HttpRequest& req = ex.req;
  const auto timeout = ex.opts.write_timeout;
  auto wakeup = std::make_shared<Wakeup>(co_await asio::this_coro::executor);
  struct Started {
    std::shared_ptr<EmbeddingJob> job;
    GenerationError err;
  };
  auto run_start = [start, wakeup] {
    Started s;
    s.job = start([wakeup] { wakeup->Notify(); }, &s.err);
    return s;
  };
  Started started = co_await RunOnPreparePool(ex, run_start);
  std::shared_ptr<EmbeddingJob> job = std::move(started.job);
  if (job == nullptr) {
    co_return co_await WriteResponse(
        ex.stream, JobRefusal(req, started.err, ex.ctx.draining.load()), ex.log, timeout);
  }
  ex.log->prompt_tokens = job->prompt_tokens();
  if (!co_await AwaitEmbeddingJob(ex, *job, *wakeup)) co_return false;
  ex.log->cached_tokens = job->cached_tokens();
  if (Status st = job->status(); !st.ok()) {
    GenerationError failed{st, "", ""};
    co_return co_await WriteResponse(ex.stream, JobRefusal(req, failed, ex.ctx.draining.load()),
                                     ex.log, timeout);
  }
  co_return co_await WriteResponse(ex.stream, JsonTextResponse(req, http::status::ok, answer(*job)),
                                   ex.log, timeout);
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
