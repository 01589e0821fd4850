#pragma once
// An EmbeddingJob over HTTP, what /v1/embeddings and /v1/rerank share: the job started (the
// request resolved and tokenized) on the server's preparation pool while the connection's
// coroutine waits without holding its io thread; the wait for its end, watching the client (one
// that goes away cancels the inputs not yet computed); its refusals as OpenAI error bodies.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/openai/openai_types.h"
#include "server/core/embedding_job.h"
#include "server/core/generation_spec.h"
#include "server/http/http_router.h"
#include "server/http/wakeup.h"

namespace sparrow::server {

// The body read as JSON and parsed by `parse` (an api/openai request parser); nullopt with
// `*error` filled, its param the field at fault.
template <typename T>
std::optional<T> ParseOpenAiBody(const std::string& body,
                                 Result<T> (*parse)(const nlohmann::json&, std::string*),
                                 GenerationError* error) {
  std::string param;
  auto json = openai::ParseRequestBody(body, &param);
  if (!json.ok()) {
    *error = {json.status(), param, ""};
    return std::nullopt;
  }
  Result<T> r = parse(*json, &param);
  if (!r.ok()) {
    *error = {r.status(), param, ""};
    return std::nullopt;
  }
  return std::move(r).value();
}

// Starts a job: EngineFacade::Embed or Rerank with `on_ready`; null with `*error` filled.
using JobStarter =
    std::function<std::shared_ptr<EmbeddingJob>(std::function<void()> on_ready, GenerationError*)>;

// Makes a 200 answer's body from a job that ended well.
using JobAnswer = std::function<std::string(EmbeddingJob& job)>;

// The exchange after parsing: `start` run on the preparation pool (inline without one; a copy
// of it, so a named object of the caller's: GCC 12 destroys a temporary argument of a
// coroutine in a co_await expression twice), its refusal answered; the job awaited while the
// client is watched (one that goes away cancels it, and the connection closes unanswered); its
// failure answered, or `answer`'s body. Returns whether the connection may be kept alive.
boost::asio::awaitable<bool> AnswerEmbeddingJob(HttpExchange& ex, const JobStarter& start,
                                                const JobAnswer& answer);

// A refusal as an OpenAI error: the status's HTTP code, `queue_full` or `draining` with
// Retry-After where a retry may pass.
HttpResponse JobRefusal(const HttpRequest& req, const GenerationError& err, bool draining);

}  // namespace sparrow::server
