#pragma once
// PoolingType: how an embedding is made from the final normed hidden states of a prompt's
// tokens, with llama.cpp's names and its GGUF values (`<arch>.pooling_type`: 0 none, 1 mean,
// 2 cls, 3 last; 4 rank is a classification head, not an embedding).
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
};

// "none", "mean", "cls", "last".
const char* PoolingName(PoolingType p);
std::optional<PoolingType> PoolingFromName(std::string_view name);
// The GGUF's value; nullopt for one Sparrow does not pool by (rank, or unknown).
std::optional<PoolingType> PoolingFromGguf(uint64_t value);
// `<general.architecture>.pooling_type`: how the file's model makes an embedding. Embedding
// models say; a plain decoder does not (nullopt), nor does a rank (classification) model, whose
// value Sparrow does not pool by.
std::optional<PoolingType> FilePooling(const GgufFile& file);
// "none, mean, cls, last", for error messages.
inline constexpr std::string_view kPoolingNames = "none, mean, cls, last";

}  // namespace sparrow
