#pragma once
// The OpenAI /v1/embeddings request (input as a string, a list of strings, a list of token ids or
// a list of token lists; encoding_format float or base64; dimensions), parsed and checked; and
// the base64 encoding of a vector as OpenAI sends it (little-endian float32). Errors name the
// field, input[i] for an entry. Pure functions, thread-safe.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::openai {

struct EmbeddingsRequest {
  std::string model;                              // "" when absent
  std::vector<std::string> texts;                 // input as text; or
  std::vector<std::vector<int32_t>> token_lists;  // input as token ids
  bool base64 = false;                            // encoding_format "base64"
  std::optional<int64_t> dimensions;
  std::string pooling;  // extension: none, mean, cls or last ("" the server's)
  std::string user;
};

// Parses a body already read as JSON (ParseRequestBody); on error `*param` names the field.
Result<EmbeddingsRequest> ParseEmbeddingsRequest(const nlohmann::json& body, std::string* param);

// The vector's float32 bytes (little-endian) in standard base64, as OpenAI's encoding_format
// "base64" answers and its clients decode.
std::string Base64Floats(std::span<const float> v);

}  // namespace sparrow::openai
