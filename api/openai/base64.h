#pragma once
// Standard base64 (RFC 4648, '+' and '/'), both ways: embeddings answer in it, data: URLs
// bring images in it. Pure functions, thread-safe.
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow::openai {

// With '=' padding, as Python's base64 and OpenAI's clients write it.
std::string Base64Encode(std::string_view bytes);

// The bytes of `text`. Padding is optional; line breaks and spaces (MIME wraps at 76) are
// skipped. InvalidArgument naming the offset of a character outside the alphabet, padding
// before the end, or a length no encoder writes; OutOfRange, before anything is allocated,
// when the bytes would be more than `max_bytes`.
Result<std::string> Base64Decode(std::string_view text, size_t max_bytes);

}  // namespace sparrow::openai
