#include "server/core/api_key.h"

#include <algorithm>
#include <cctype>

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

std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || authorization[kScheme.size()] != ' ') return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  return token;
}

bool BearerKeyMatches(std::string_view authorization, std::string_view key) {
  // The scheme is no secret: checking it first leaks nothing about the key.
  const std::string_view token = BearerToken(authorization);
  if (key.empty() || token.empty()) return false;
  return ConstantTimeEquals(token, key);
}

}  // namespace sparrow::server
