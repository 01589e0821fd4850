#pragma once
// The SentencePiece-style encoder of llama.cpp (llm_tokenizer_spm): start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the highest-scoring
// token, then emit tokens, falling back to byte tokens for characters not in the vocabulary.
// Stateless; thread-safe.
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

// Encodes `text` (spaces already written as U+2581) and appends the ids to `out`.
void SpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

}  // namespace sparrow::tokenizer
