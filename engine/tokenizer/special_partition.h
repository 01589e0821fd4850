#pragma once
// Splits raw text into text fragments and special tokens before the model tokenizer runs, as
// llama.cpp's tokenizer_st_partition does: special tokens longest first, every occurrence,
// honouring the lstrip/rstrip attributes. Stateless; thread-safe.
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

// A byte range [offset, offset + length) of the text.
struct TextRange {
  size_t offset = 0;
  size_t length = 0;
};

struct Fragment {
  TokenId token = kNoToken;  // a matched special token, or kNoToken for text
  size_t offset = 0;         // text fragments: [offset, offset + length) of the input
  size_t length = 0;
};

// With parse_special false only user-defined tokens are matched (control and unknown tokens
// stay text); with it true all three kinds are, except where a match would overlap one of the
// `literal` ranges (sorted, disjoint): text a user typed inside a chat template stays text
// there, while the template's own markers around it become control tokens.
std::vector<Fragment> PartitionSpecialTokens(const Vocab& vocab, std::string_view text,
                                             bool parse_special,
                                             std::span<const TextRange> literal = {});

}  // namespace sparrow::tokenizer
