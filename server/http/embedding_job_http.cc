#include "server/http/embedding_job_http.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/http/http_status.h"

namespace sparrow::server {
namespace {

namespace asio = boost::asio;
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr int kClientClosedRequest = 499;  // nginx's convention, as for generations

asio::awaitable<std::shared_ptr<EmbeddingJob>> StartEmbeddingJob(HttpExchange& ex,
                                                                 const JobStarter& start,
                                                                 std::shared_ptr<Wakeup> wakeup,
                                                                 GenerationError* err) {
  auto on_ready = [wakeup] { wakeup->Notify(); };
  asio::thread_pool* pool = ex.state != nullptr ? ex.state->prepare.get() : nullptr;
  if (pool == nullptr) co_return start(on_ready, err);
  struct Handoff {
    std::shared_ptr<EmbeddingJob> job;
    GenerationError err;
    std::atomic<bool> done{false};
  };
  auto handoff = std::make_shared<Handoff>();
  asio::post(*pool, [handoff, wakeup, start, on_ready] {
    handoff->job = start(on_ready, &handoff->err);
    handoff->done.store(true, std::memory_order_release);
    wakeup->Notify();
  });
  while (!handoff->done.load(std::memory_order_acquire)) co_await wakeup->Wait(kPoll);
  *err = std::move(handoff->err);
  co_return std::move(handoff->job);
}

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
  GenerationError err;
  std::shared_ptr<EmbeddingJob> job = co_await StartEmbeddingJob(ex, start, wakeup, &err);
  if (job == nullptr) {
    co_return co_await WriteResponse(ex.stream, JobRefusal(req, err, ex.ctx.draining.load()),
                                     ex.log, timeout);
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
