#pragma once
// POST /v1/embeddings (OpenAI's shape): the body parsed into an EmbeddingSpec, the inputs run
// through EngineFacade::Embed, and one JSON answer: a list of {"object": "embedding", "index",
// "embedding"} (floats, or base64 of little-endian float32 for encoding_format "base64") with
// "usage". Beside OpenAI's fields, "pooling" (mean, cls or last) overrides the server's. A
// client that goes away (watched while it waits) cancels the inputs not yet computed. The model
// named is loaded on demand (ServerContext::EngineFor).
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/core/engine_facade.h"
#include "server/http/http_router.h"

namespace sparrow::server {

// An embedding request run to its end, for every HTTP dialect of it (OpenAI's, Ollama's).
struct EmbeddingRun {
  std::optional<EngineFacade> engine;  // the model it ran on; kept while `job` is read
  std::shared_ptr<EmbeddingJob> job;   // null: refused (`error`)
  GenerationError error;               // refused, or the job failed (then job->status())
  bool client_left = false;            // the client went away; the job was cancelled
};
using EngineLookup = std::function<Result<EngineFacade>(const std::string& model)>;

// Takes the engine of spec.model from `lookup` (ServerContext::EngineFor: loading it on
// demand) and starts EngineFacade::Embed, both on the preparation pool, then waits for the
// job while watching the client. run.error is set when refused or failed.
boost::asio::awaitable<EmbeddingRun> RunEmbedding(HttpExchange& ex, const EmbeddingSpec& spec,
                                                  EngineLookup lookup);

// Returns whether the connection may be kept alive.
boost::asio::awaitable<bool> HandleEmbeddings(HttpExchange& ex);

}  // namespace sparrow::server
