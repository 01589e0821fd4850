#pragma once
// One byte inside a JSON string literal, as json.dumps and nlohmann write it: the quote and
// backslash escaped, the short escapes JSON has (\b \f \n \r \t), \u00xx for the other control
// bytes, any other byte as it is (whether bytes from 0x80 up make valid UTF-8 is the caller's).
#include <string>

namespace sparrow {

inline void AppendJsonEscapedAscii(unsigned char c, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '"':
      out->append("\\\"");
      break;
    case '\\':
      out->append("\\\\");
      break;
    case '\b':
      out->append("\\b");
      break;
    case '\f':
      out->append("\\f");
      break;
    case '\n':
      out->append("\\n");
      break;
    case '\r':
      out->append("\\r");
      break;
    case '\t':
      out->append("\\t");
      break;
    default:
      if (c < 0x20) {
        const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, sizeof esc);
      } else {
        out->push_back(static_cast<char>(c));
      }
  }
}

}  // namespace sparrow
