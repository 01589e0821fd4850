#pragma once
// The byte-level BPE encoder of llama.cpp (llm_tokenizer_bpe): pre-tokenize into words, then
// within each word repeatedly merge the adjacent pair of lowest merge rank. Stateless;
// thread-safe.
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

// Encodes raw `text` (no special tokens inside) and appends the ids to `out`.
void BpeEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

}  // namespace sparrow::tokenizer
