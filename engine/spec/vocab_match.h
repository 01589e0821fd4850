#pragma once
// A draft model is only of use with the target's vocabulary: its ids must mean the same pieces.
#include <string>

#include "engine/common/status.h"
#include "engine/tokenizer/tokenizer.h"

namespace sparrow {

// Ok when both vocabularies have the same size and the same text for every id; otherwise
// InvalidArgument naming the files (`target_name`, `draft_name`), the first differing id and
// both texts.
Status CheckDraftVocab(const Tokenizer& target, const std::string& target_name,
                       const Tokenizer& draft, const std::string& draft_name);

}  // namespace sparrow
