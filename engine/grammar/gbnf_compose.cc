#include "engine/grammar/gbnf_compose.h"

namespace sparrow::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// The index just past the literal or class that opens at `i` (`close` ends it; backslash
// escapes the next byte).
size_t SkipQuoted(std::string_view s, size_t i, char close) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == close) {
      return i + 1;
    }
  }
  return s.size();
}

}  // namespace

std::string PrefixGbnfRules(std::string_view s, std::string_view prefix) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    size_t end = i + 1;
    if (c == '"') {
      end = SkipQuoted(s, i, '"');
    } else if (c == '[') {
      end = SkipQuoted(s, i, ']');
    } else if (c == '{') {
      end = s.find('}', i);
      end = end == std::string_view::npos ? s.size() : end + 1;
    } else if (c == '#') {
      end = s.find('\n', i);
      if (end == std::string_view::npos) end = s.size();
    } else if (IsNameChar(c)) {
      while (end < s.size() && IsNameChar(s[end])) ++end;
      out += prefix;
    }
    out.append(s.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace sparrow::grammar
