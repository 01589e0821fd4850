#pragma once
// Splits raw text into text fragments and special tokens before the model tokenizer runs, as
// llama.cpp's tokenizer_st_partition does: special tokens longest first, every occurrence,
// honouring the lstrip/rstrip attributes. Stateless; thread-safe.
#include <cstddef>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sparrow::tokenizer {

struct Fragment {
  TokenId token = kNoToken;  // a matched special token, or kNoToken for text
  size_t offset = 0;         // text fragments: [offset, offset + length) of the input
  size_t length = 0;
};

// With parse_special false only user-defined tokens are matched (control and unknown tokens
// stay text); with it true all three kinds are.
std::vector<Fragment> PartitionSpecialTokens(const Vocab& vocab, std::string_view text,
                                             bool parse_special);

}  // namespace sparrow::tokenizer
