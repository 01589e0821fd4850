#pragma once
// PoolingType: how an embedding is made from the final normed hidden states of a prompt's
// tokens, with llama.cpp's names and its GGUF values (`<arch>.pooling_type`: 0 none, 1 mean,
// 2 cls, 3 last, 4 rank). Rank is not an embedding: one token's row through the model's
// classification head (ClassifierHead), a reranker's relevance score.
#include <cstdint>
#include <optional>
#include <string_view>

namespace sparrow {

class GgufFile;

enum class PoolingType {
  kNone,  // every token's row
  kMean,  // the average of the rows
  kCls,   // the first token's row
  kLast,  // the last token's row (decoder embedding models: Qwen3-Embedding, e5-mistral)
  kRank,  // the head's row (ClassifierHead::row) through the classification head: scores
};

// "none", "mean", "cls", "last", "rank".
const char* PoolingName(PoolingType p);
std::optional<PoolingType> PoolingFromName(std::string_view name);
// The GGUF's value; nullopt for an unknown one.
std::optional<PoolingType> PoolingFromGguf(uint64_t value);
// `<general.architecture>.pooling_type`: how the file's model makes an embedding (or, rank, a
// score). Embedding models and rerankers say; a plain decoder does not (nullopt).
std::optional<PoolingType> FilePooling(const GgufFile& file);
// "none, mean, cls, last", for error messages.
inline constexpr std::string_view kPoolingNames = "none, mean, cls, last, rank";

}  // namespace sparrow
