#include "server/core/api_key.h"

#include <algorithm>

namespace sparrow::server {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walk the longer length so a short guess costs as much as a long one.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool BearerKeyMatches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view kPrefix = "Bearer ";
  // The prefix is no secret: checking it first leaks nothing about the key.
  if (key.empty() || !authorization.starts_with(kPrefix)) return false;
  return ConstantTimeEquals(authorization.substr(kPrefix.size()), key);
}

}  // namespace sparrow::server
