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
#include "server/http/embedding_job_http.h"
#include "server/http/http_router.h"

namespace sparrow::server {

// RunEmbeddingJob with EngineFacade::Embed: the engine of spec.model from `lookup` (loading it
// on demand), the inputs computed, the client watched.
boost::asio::awaitable<EmbeddingRun> RunEmbedding(HttpExchange& ex, const EmbeddingSpec& spec,
                                                  const EngineLookup& lookup);

// Returns whether the connection may be kept alive.
boost::asio::awaitable<bool> HandleEmbeddings(HttpExchange& ex);

}  // namespace sparrow::server
