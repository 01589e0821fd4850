#pragma once
// RerankFormat: how a reranker reads a query and a document as one prompt, as llama-server's
// format_prompt_rerank writes it: the GGUF's `tokenizer.chat_template.rerank` (Qwen3-Reranker's
// instruction) with {query} and {document} put in, its own markers parsed as control tokens and
// the client's text never; else [BOS] query [EOS] [SEP] document [EOS], each marker where the
// vocabulary adds it (tokenizer.ggml.add_bos_token, add_eos_token, add_sep_token; an EOS the
// vocabulary lacks is its SEP). Resolved once when the model loads; immutable, thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow::server {

struct RerankFormat {
  std::optional<std::string> prompt_template;  // tokenizer.chat_template.rerank
  bool add_sep = false;                        // llama.cpp's default, or the file's key

  static RerankFormat FromFile(const GgufFile& file);
  // The pair's prompt as token ids.
  std::vector<int32_t> Tokenize(const Tokenizer& tok, std::string_view query,
                                std::string_view document) const;
};

}  // namespace sparrow::server
