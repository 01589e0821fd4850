#pragma once
// The tokenizer of a synthetic model: every tokenizer.* key of a vocabulary GGUF, with the token
// list (and its scores and types) padded by unused tokens up to a real model's vocabulary size,
// so the embedding and output matrices have that model's rows. Thread-safe.
#include <cstdint>

#include "engine/common/result.h"
#include "engine/model/gguf_file.h"
#include "engine/model/gguf_header.h"

namespace sparrow::tools {

// Copies the tokenizer of `vocab` (read from `vocab_path`, named in errors) into `out`; returns
// the vocabulary size: max(n_vocab, the file's token count).
Result<int64_t> CopyVocabulary(const GgufFile& vocab, const std::string& vocab_path,
                               int64_t n_vocab, GgufHeader& out);

}  // namespace sparrow::tools
