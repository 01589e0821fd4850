#pragma once
// An EmbeddingJob over HTTP, what /v1/embeddings, /v1/rerank and Ollama's /api/embed share: the
// job started (the model resolved, the request tokenized) on the server's preparation pool while
// the connection's coroutine waits without holding its io thread; the wait for its end, watching
// the client (one that goes away cancels the inputs not yet computed); its refusals as OpenAI
// error bodies.
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
#include "server/core/engine_facade.h"
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

// An embedding or rerank request run to its end, for every HTTP dialect of it (OpenAI's,
// Ollama's).
struct EmbeddingRun {
  std::optional<EngineFacade> engine;  // the model it ran on; kept while `job` is read
  std::shared_ptr<EmbeddingJob> job;   // null: refused (`error`)
  GenerationError error;               // refused, or the job failed (then job->status())
  bool client_left = false;            // the client went away; the job was cancelled
};

// The engine of a model name (ServerContext::EngineFor: loading it on demand).
using EngineLookup = std::function<Result<EngineFacade>(const std::string& model)>;

// Starts a job on `engine`: EngineFacade::Embed or Rerank with `on_ready`; null with `*error`
// filled.
using JobStarter = std::function<std::shared_ptr<EmbeddingJob>(
    EngineFacade& engine, std::function<void()> on_ready, GenerationError* error)>;

// Takes the engine of `model` from `lookup` and starts the job with `start`, both on the
// preparation pool (inline without one), then waits for the job while watching the client (one
// that goes away cancels the inputs not yet computed: run.client_left). run.error is set when
// refused (its param `model_field` when the model is at fault) or failed. The arguments are
// the caller's named objects, alive until this returns.
boost::asio::awaitable<EmbeddingRun> RunEmbeddingJob(HttpExchange& ex, const std::string& model,
                                                     const std::string& model_field,
                                                     const EngineLookup& lookup,
                                                     const JobStarter& start);

// Makes a 200 answer's body from a job that ended well.
using JobAnswer = std::function<std::string(EngineFacade& engine, EmbeddingJob& job)>;

// The OpenAI-shaped answer of a run: the request log filled, nothing for a client that left
// (499 in the log), the refusal or failure as an error body, else `answer`'s body. Returns
// whether the connection may be kept alive.
boost::asio::awaitable<bool> WriteEmbeddingRun(HttpExchange& ex, EmbeddingRun& run,
                                               const JobAnswer& answer);

// A refusal as an OpenAI error: the status's HTTP code, `queue_full` or `draining` with
// Retry-After where a retry may pass.
HttpResponse JobRefusal(const HttpRequest& req, const GenerationError& err, bool draining);

}  // namespace sparrow::server
