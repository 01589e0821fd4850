#include "engine/tokenizer/unicode.h"

#include <utf8proc.h>

namespace sparrow::tokenizer {

size_t Utf8SequenceLength(uint8_t lead) {
  const uint8_t nibble = lead >> 4;
  if (nibble < 0xC) return 1;
  if (nibble < 0xE) return 2;
  if (nibble == 0xE) return 3;
  return 4;
}

namespace {

bool IsContinuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Decodes one code point at `*pos`; on malformed input returns false and leaves `*pos` alone.
bool DecodeOne(std::string_view s, size_t* pos, uint32_t* cpt) {
  const size_t i = *pos;
  const uint8_t b0 = static_cast<uint8_t>(s[i]);
  size_t len;
  uint32_t value;
  if (b0 < 0x80) {
    *cpt = b0;
    *pos = i + 1;
    return true;
  } else if ((b0 & 0x40) == 0) {
    return false;  // a continuation byte cannot start a sequence
  } else if ((b0 & 0x20) == 0) {
    len = 2;
    value = b0 & 0x1F;
  } else if ((b0 & 0x10) == 0) {
    len = 3;
    value = b0 & 0x0F;
  } else if ((b0 & 0x08) == 0) {
    len = 4;
    value = b0 & 0x07;
  } else {
    return false;
  }
  if (i + len > s.size()) return false;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t b = static_cast<uint8_t>(s[i + k]);
    if (!IsContinuation(b)) return false;
    value = (value << 6) | (b & 0x3F);
  }
  *cpt = value;
  *pos = i + len;
  return true;
}

}  // namespace

std::vector<uint32_t> DecodeUtf8Lossy(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cpt;
    if (DecodeOne(text, &pos, &cpt)) {
      out.push_back(cpt);
    } else {
      out.push_back(kReplacementChar);
      ++pos;
    }
  }
  return out;
}

void AppendUtf8(uint32_t cpt, std::string* out) {
  if (cpt > 0x10FFFF) cpt = kReplacementChar;
  if (cpt < 0x80) {
    out->push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

std::string EncodeUtf8(uint32_t cpt) {
  std::string s;
  AppendUtf8(cpt, &s);
  return s;
}

bool IsUnicodeWhitespace(uint32_t cpt) {
  // The White_Space property (PropList.txt); stable across Unicode versions.
  switch (cpt) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

CodepointFlags GetCodepointFlags(uint32_t cpt) {
  CodepointFlags f;
  f.whitespace = IsUnicodeWhitespace(cpt);
  if (cpt > 0x10FFFF) {
    f.category = CodepointFlags::kUndefined;
    return f;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cpt))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      f.category = CodepointFlags::kLetter;
      break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      f.category = CodepointFlags::kMark;
      break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      f.category = CodepointFlags::kNumber;
      break;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      f.category = CodepointFlags::kPunctuation;
      break;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      f.category = CodepointFlags::kSymbol;
      break;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      f.category = CodepointFlags::kSeparator;
      break;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      f.category = CodepointFlags::kControl;
      break;
    default:
      f.category = CodepointFlags::kUndefined;
      break;
  }
  return f;
}

uint32_t ToLowerCodepoint(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cpt)));
}

uint32_t NfdFirstCodepoint(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt;
  // Canonical decompositions are a few code points long (Hangul 3, the longest 4).
  constexpr utf8proc_ssize_t kRoom = 16;
  utf8proc_int32_t out[kRoom];
  int boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cpt), out, kRoom,
                                                     UTF8PROC_DECOMPOSE, &boundclass);
  return n >= 1 && n <= kRoom ? static_cast<uint32_t>(out[0]) : cpt;
}

}  // namespace sparrow::tokenizer
