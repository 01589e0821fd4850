#pragma once
// Reads the tokenizer.ggml.* metadata of a GGUF file into VocabData (no validation beyond the
// value types; Vocab::Create does the rest). Thread-safe: reads only.
#include "engine/common/result.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/vocab.h"

namespace sparrow {

// NotFound when the file has no tokenizer.ggml.model; Corrupt when a key has the wrong type or
// a required array is missing.
Result<VocabData> ReadVocabData(const GgufFile& file);

}  // namespace sparrow
