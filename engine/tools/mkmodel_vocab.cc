#include "engine/tools/mkmodel_vocab.h"

#include <cstring>
#include <string>
#include <vector>

namespace sparrow::tools {
namespace {

constexpr int32_t kUnusedTokenType = 5;  // llama.cpp's LLAMA_TOKEN_TYPE_UNUSED

// A numeric array's elements, widened to std::vector<T>; Corrupt when they are not of `type`.
template <typename T>
Result<std::vector<T>> NumericArray(const GgufValue& v, GgufValueType type,
                                    const std::string& what) {
  const GgufArray* a = std::get_if<GgufArray>(&v.v);
  if (!a || a->elem_type != type || !a->data) {
    return Corrupt(what + " is not an array of " + std::string(GgufValueTypeName(type)));
  }
  std::vector<T> out(a->size);
  std::memcpy(out.data(), a->data, a->size * sizeof(T));
  return out;
}

}  // namespace

Result<int64_t> CopyVocabulary(const GgufFile& vocab, const std::string& vocab_path,
                               int64_t n_vocab, GgufHeader& out) {
  SPARROW_ASSIGN_OR_RETURN(const GgufArray* tokens, vocab.GetArray("tokenizer.ggml.tokens"));
  const int64_t n_file = static_cast<int64_t>(tokens->size);
  const int64_t n = std::max(n_vocab, n_file);
  for (const auto& [key, value] : vocab.metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    const std::string what = vocab_path + ": " + key;
    if (n == n_file) {
      SPARROW_RETURN_IF_ERROR(out.AddCopy(key, value).WithContext(vocab_path));
    } else if (key == "tokenizer.ggml.tokens") {
      std::vector<std::string> padded(tokens->strings.begin(), tokens->strings.end());
      for (int64_t i = n_file; i < n; ++i) padded.push_back("<unused_" + std::to_string(i) + ">");
      out.AddStringArray(key, padded);
    } else if (key == "tokenizer.ggml.scores") {
      SPARROW_ASSIGN_OR_RETURN(auto scores, NumericArray<float>(value, GgufValueType::kF32, what));
      scores.resize(n, 0.0f);
      out.AddArray(key, scores);
    } else if (key == "tokenizer.ggml.token_type") {
      SPARROW_ASSIGN_OR_RETURN(auto types, NumericArray<int32_t>(value, GgufValueType::kI32, what));
      types.resize(n, kUnusedTokenType);
      out.AddArray(key, types);
    } else {
      SPARROW_RETURN_IF_ERROR(out.AddCopy(key, value).WithContext(vocab_path));
    }
  }
  return n;
}

}  // namespace sparrow::tools
