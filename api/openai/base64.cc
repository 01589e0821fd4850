#include "api/openai/base64.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace sparrow::openai {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr int8_t kSkip = -2;  // white space
constexpr int8_t kBad = -1;

constexpr std::array<int8_t, 256> MakeValues() {
  std::array<int8_t, 256> v{};
  for (auto& x : v) x = kBad;
  for (int i = 0; i < 64; ++i) v[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  for (char c : {' ', '\t', '\r', '\n'}) v[static_cast<uint8_t>(c)] = kSkip;
  return v;
}
constexpr std::array<int8_t, 256> kValues = MakeValues();

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 0x3f] : '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text, size_t max_bytes) {
  // At most 3 bytes per 4 characters: refused before the output is allocated.
  const size_t at_most = text.size() / 4 * 3 + (text.size() % 4 + 1) / 2;
  if (at_most > max_bytes) {
    // White space may make the estimate high; count the characters that carry data.
    size_t symbols = 0;
    for (char c : text) symbols += kValues[static_cast<uint8_t>(c)] >= 0;
    if (symbols / 4 * 3 + (symbols % 4) * 3 / 4 > max_bytes) {
      return OutOfRange("decodes to more than " + std::to_string(max_bytes) + " bytes");
    }
  }
  std::string out;
  out.reserve(std::min(at_most, max_bytes));
  uint32_t bits = 0;
  int n_bits = 0;
  size_t symbols = 0;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const int8_t v = kValues[static_cast<uint8_t>(c)];
    if (v == kSkip) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (v == kBad || padding > 0) {
      return InvalidArgument(
          std::string(padding > 0 ? "has data after its '=' padding" : "is not base64") +
          " (at offset " + std::to_string(i) + ")");
    }
    ++symbols;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    n_bits += 6;
    if (n_bits >= 8) {
      n_bits -= 8;
      out += static_cast<char>((bits >> n_bits) & 0xff);
    }
  }
  // A last group of one character carries no whole byte; padding only fills a group to 4.
  if (symbols % 4 == 1 || (padding > 0 && (symbols + padding) % 4 != 0) || padding > 2) {
    return InvalidArgument("is not base64 (its length, " + std::to_string(symbols) +
                           " characters and " + std::to_string(padding) +
                           " '=', is not one an encoder writes)");
  }
  return out;
}

}  // namespace sparrow::openai
