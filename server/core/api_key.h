#pragma once
// The API-key check both frontends use: `Authorization: Bearer <key>` (HTTP header or gRPC
// metadata). Comparisons take the same time wherever the first difference is, so response
// timing does not leak the key. Pure functions, thread-safe.
#include <string_view>

namespace sparrow::server {

// True when the strings are equal; the time depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// The credentials of an "Authorization: Bearer <token>" value, or "" when the scheme is not
// Bearer. The scheme is case-insensitive and may be followed by several spaces (RFC 7235).
std::string_view BearerToken(std::string_view authorization);

// True when `authorization` carries the Bearer token `key` (non-empty).
bool BearerKeyMatches(std::string_view authorization, std::string_view key);

}  // namespace sparrow::server
