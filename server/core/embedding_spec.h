#pragma once
// The one place an embedding request is prepared for every frontend (OpenAI's /v1/embeddings,
// gRPC Embed, and Ollama's /api/embed after it): a frontend parses its format into an
// EmbeddingSpec; ResolveEmbedding checks the model, tokenizes (client text never becomes
// control tokens), checks each input against the context and the request against its bounds,
// and chooses the pooling. HTTP and gRPC therefore accept and refuse the same requests.
// Pure functions over the served model; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/pooling_type.h"
#include "server/core/generation_spec.h"

namespace sparrow::server {

// Bounds of one request. Its memory is its tokens (at most kMaxEmbeddingTokens ids) and its
// vectors (inputs x n_embd floats); the scheduler sees at most `window` of its inputs at once.
inline constexpr size_t kMaxEmbeddingInputs = 2048;      // OpenAI's limit
inline constexpr int64_t kMaxEmbeddingTokens = 300'000;  // OpenAI's, summed over the inputs

// What a client asked for.
struct EmbeddingSpec {
  std::string model;                              // "" means the served model
  std::vector<std::string> texts;                 // each embedded on its own; or
  std::vector<std::vector<int32_t>> token_lists;  // token ids used as given (one of the two)
  std::optional<PoolingType> pooling;             // unset: the server's (ServedModel::pooling)
  // The first N components, normalised again (a Matryoshka-trained model's shorter vectors; on
  // another model they are still unit vectors, only less meaningful). Unset: n_embd.
  std::optional<int64_t> dimensions;
  // The names this frontend's clients know the fields by, for error messages.
  struct FieldNames {
    std::string model = "model", input = "input", dimensions = "dimensions", pooling = "pooling";
  } fields;
};

// An embedding request ready for the scheduler.
struct ResolvedEmbedding {
  std::vector<std::vector<int32_t>> inputs;  // BOS/EOS as the vocabulary asks
  PoolingType pooling = PoolingType::kLast;
  int64_t dimensions = 0;  // components kept of each vector
  int64_t prompt_tokens = 0;
};

// Either fills `*out` and returns true, or fills `*error` (the field at fault named as the
// client wrote it: input[3] for the fourth input).
bool ResolveEmbedding(const ServedModel& model, const EmbeddingSpec& spec, ResolvedEmbedding* out,
                      GenerationError* error);

}  // namespace sparrow::server
