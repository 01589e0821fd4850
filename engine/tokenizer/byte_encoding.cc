#include "engine/tokenizer/byte_encoding.h"

#include <array>

#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

bool IsSelfMapped(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> byte_to_cpt{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 512> cpt_to_byte{};  // every alphabet code point is below U+0200

  Tables() {
    cpt_to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      byte_to_cpt[b] = IsSelfMapped(b) ? static_cast<uint32_t>(b) : next++;
      byte_to_utf8[b] = EncodeUtf8(byte_to_cpt[b]);
      cpt_to_byte[byte_to_cpt[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

const std::string& ByteToUnicodeUtf8(uint8_t byte) {
  return GetTables().byte_to_utf8[byte];
}

std::optional<uint8_t> UnicodeToByte(uint32_t cpt) {
  if (cpt >= 512) return std::nullopt;
  const int16_t b = GetTables().cpt_to_byte[cpt];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

void AppendByteEncoded(std::string_view text, std::string* out) {
  const Tables& t = GetTables();
  for (char c : text) out->append(t.byte_to_utf8[static_cast<uint8_t>(c)]);
}

}  // namespace sparrow::tokenizer
