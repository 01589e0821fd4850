#pragma once
// Random identifiers for responses and tool calls ("chatcmpl-...", "call_..."). Thread-safe.
#include <cstddef>
#include <string>

namespace sparrow::server {

// `n` characters from [0-9a-z].
std::string RandomAlnum(size_t n);

}  // namespace sparrow::server
