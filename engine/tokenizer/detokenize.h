#pragma once
// Token -> text helpers with llama.cpp's exact rules (llama_token_to_piece, llama_detokenize),
// and the SPM space escaping they undo. Stateless; thread-safe.
#include <span>
#include <string>
#include <string_view>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

// Writes every space as U+2581, as SentencePiece stores it.
std::string EscapeSpmSpaces(std::string_view text);

// The piece of `id` (special=false hides control and unknown tokens); "" for bad ids.
std::string_view Piece(const Vocab& vocab, TokenId id, bool special);

std::string Detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool remove_special,
                       bool unparse_special);

// The clean_up_tokenization_spaces passes: " ?" " !" " ." " ," lose the space, " ' " becomes
// "'", and " 's" " 'm" " 're" " 've" lose the space.
void CleanUpSpaces(std::string* text);

}  // namespace sparrow::tokenizer
