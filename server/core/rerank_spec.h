#pragma once
// The one place a rerank request is prepared for every frontend (/v1/rerank and its aliases,
// gRPC Rerank): a frontend parses its format into a RerankSpec; ResolveRerank checks the model
// (it must have a classification head), writes each (query, document) pair as the model's
// RerankFormat says, checks each pair against the context and the request against its bounds.
// The result is an embedding request of pooling rank: one prompt per document, each scored by
// one prefill through the scheduler (EmbeddingJob). Pure functions over the served model;
// thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/core/embedding_spec.h"
#include "server/core/generation_spec.h"

namespace sparrow::server {

// Bounds of one request: its memory is its documents' tokens (at most kMaxEmbeddingTokens in
// all) and a score per document.
inline constexpr size_t kMaxRerankDocuments = 1000;  // Cohere's limit

struct RerankSpec {
  std::string model;  // "" means the served model
  std::string query;
  std::vector<std::string> documents;
  std::optional<int64_t> top_n;  // the answer's best N (at least 1); unset: every document
  // The names this frontend's clients know the fields by, for error messages.
  struct FieldNames {
    std::string model = "model", query = "query", documents = "documents", top_n = "top_n";
  } fields;
};

// Either fills `*out` (pooling rank, a prompt per document, dimensions the head's score count)
// and returns true, or fills `*error` (the field at fault named as the client wrote it:
// documents[3] for the fourth document).
bool ResolveRerank(const ServedModel& model, const RerankSpec& spec, ResolvedEmbedding* out,
                   GenerationError* error);

// The order of the answer: documents' indices by relevance, best first (ties by index), the
// first `top_n` (unset: all).
std::vector<size_t> RankedIndices(const std::vector<float>& scores, std::optional<int64_t> top_n);

}  // namespace sparrow::server
