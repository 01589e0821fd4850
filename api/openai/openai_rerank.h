#pragma once
// The rerank request of llama-server's /v1/rerank, as Jina's and Cohere's APIs write it: `query`,
// `documents` (strings, or objects with a string `text`), `top_n`, `return_documents`; parsed
// and checked. Errors name the field, documents[i] for an entry. Pure function, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::openai {

struct RerankRequest {
  std::string model;  // "" when absent
  std::string query;
  std::vector<std::string> documents;
  std::optional<int64_t> top_n;   // unset: every document
  bool return_documents = false;  // each result carries its document's text
};

// Parses a body already read as JSON (ParseRequestBody); on error `*param` names the field.
Result<RerankRequest> ParseRerankRequest(const nlohmann::json& body, std::string* param);

}  // namespace sparrow::openai
