#pragma once
// The WordPiece encoder of llama.cpp (llm_tokenizer_wpm, d32676d7): normalise (NFD to one code
// point each, lowercase, accents dropped, as the vocabulary says; controls dropped), split into
// words at whitespace and around punctuation, ASCII symbols and CJK ideographs, then cover each
// word, written with a leading U+2581, by the longest tokens from its start; a word that cannot
// be covered becomes [UNK]. Stateless; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

// The words of `text` after normalisation (exposed for tests).
std::vector<std::string> WpmWords(const Vocab& vocab, std::string_view text);

// Encodes raw `text` (no special tokens inside) and appends the ids to `out`.
void WpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

}  // namespace sparrow::tokenizer
