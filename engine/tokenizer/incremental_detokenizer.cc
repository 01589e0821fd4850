#include "engine/tokenizer/incremental_detokenizer.h"

#include <cstdint>

namespace sparrow {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The length of a well-formed sequence starting with `lead` and the allowed range of its
// second byte (Unicode Table 3-7); length 0 for bytes that cannot start one.
struct LeadInfo {
  int length;
  uint8_t lo, hi;  // range of the second byte; later bytes are always 80..BF
};

LeadInfo Lead(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t AppendSanitizedUtf8(std::string_view bytes, bool at_end, std::string* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const LeadInfo info = Lead(static_cast<uint8_t>(bytes[i]));
    if (info.length == 0) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    // Count the bytes that fit the expected pattern.
    int fit = 1;
    while (fit < info.length && i + fit < bytes.size()) {
      const uint8_t b = static_cast<uint8_t>(bytes[i + fit]);
      const uint8_t lo = fit == 1 ? info.lo : 0x80;
      const uint8_t hi = fit == 1 ? info.hi : 0xBF;
      if (b < lo || b > hi) break;
      ++fit;
    }
    if (fit == info.length) {
      out->append(bytes.substr(i, fit));
      i += fit;
    } else if (i + fit == bytes.size() && !at_end) {
      break;  // a character still arriving
    } else {
      out->append(kReplacement);  // this byte only; the next one may start a character
      ++i;
    }
  }
  return i;
}

std::string IncrementalDetokenizer::Push(TokenId id) {
  return PushBytes(tokenizer_.piece(id, special_));
}

std::string IncrementalDetokenizer::PushBytes(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  pending_.erase(0, AppendSanitizedUtf8(pending_, /*at_end=*/false, &out));
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out;
  AppendSanitizedUtf8(pending_, /*at_end=*/true, &out);
  pending_.clear();
  return out;
}

}  // namespace sparrow
