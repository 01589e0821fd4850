#pragma once
// ModelDigest: a short fingerprint of a GGUF file, so that devices running one model together
// can check they hold the same file without sending it. It covers the file's size, its whole
// header (metadata, tokenizer, tensor names, types and offsets) and 64 pages spread over the
// tensor data: any other model, quantization or conversion differs; a file damaged in a few
// bytes of its data may not (hashing gigabytes at every start would cost seconds on a phone).
#include <string>

#include "engine/model/gguf_file.h"

namespace sparrow {

// 16 hex digits.
std::string ModelDigest(const GgufFile& file);

}  // namespace sparrow
