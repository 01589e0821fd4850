#pragma once
// POST /v1/rerank (aliases /rerank, /v1/reranking, /reranking, as llama-server has): the body
// parsed into a RerankSpec (api/openai/openai_rerank.h), each document scored against the query
// through EngineFacade::Rerank (one prefill per document, batched by the scheduler), and one
// JSON answer in llama-server's / Jina's / Cohere's shape: {"model", "object": "list", "usage":
// {"prompt_tokens", "total_tokens"}, "results": [{"index", "relevance_score", "document":
// {"text"} with return_documents}]}, best first, the first top_n. A model without a
// classification head is refused (400 model_not_reranker); a client that goes away cancels the
// documents not yet scored.
// clang-format off
#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/http/http_router.h"

namespace sparrow::server {

// Returns whether the connection may be kept alive.
boost::asio::awaitable<bool> HandleRerank(HttpExchange& ex);

// The answer's text: `scores[i]` is documents[i]'s relevance; in RankedIndices' order (best
// first, the first top_n); `documents` given: each result carries its text.
std::string RerankResponseText(const std::string& model, const std::vector<float>& scores,
                               std::optional<int64_t> top_n,
                               const std::vector<std::string>* documents, int64_t prompt_tokens);

}  // namespace sparrow::server
