#pragma once
// UTF-8 and Unicode-category helpers with the exact conventions of llama.cpp's tokenizers:
// a lenient decoder (each undecodable byte becomes U+FFFD), category flags from utf8proc, and
// the White_Space set. Pure functions; thread-safe.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparrow::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence announced by `lead` (1 for ASCII and for stray continuation
// bytes, 2/3/4 from the high nibble). The SPM tokenizer splits text with this alone.
size_t Utf8SequenceLength(uint8_t lead);

// Decodes `text` into code points. Malformed input never fails: a byte that does not start a
// complete sequence becomes U+FFFD and decoding resumes at the next byte. Overlong forms are
// accepted as decoded, and 4-byte leads up to 0xF7 may yield values above U+10FFFF.
std::vector<uint32_t> DecodeUtf8Lossy(std::string_view text);

// Appends the UTF-8 encoding of `cpt`; values above U+10FFFF are written as U+FFFD.
void AppendUtf8(uint32_t cpt, std::string* out);
std::string EncodeUtf8(uint32_t cpt);

// General category of a code point reduced to the classes the pre-tokenizers test.
struct CodepointFlags {
  enum Category : uint8_t {
    kNone = 0,     // only for positions outside the text
    kUndefined,    // unassigned (Cn) or beyond U+10FFFF
    kNumber,       // \p{N}
    kLetter,       // \p{L}
    kSeparator,    // \p{Z}
    kMark,         // \p{M}
    kPunctuation,  // \p{P}
    kSymbol,       // \p{S}
    kControl,      // \p{C} other than Cn
  };
  Category category = kNone;
  bool whitespace = false;  // Unicode White_Space (regex \s in Python/Rust)

  bool any() const { return category != kNone; }
  bool is_letter() const { return category == kLetter; }
  bool is_number() const { return category == kNumber; }
  bool is_punctuation() const { return category == kPunctuation; }
  bool is_symbol() const { return category == kSymbol; }
  bool is_mark() const { return category == kMark; }
};

CodepointFlags GetCodepointFlags(uint32_t cpt);
bool IsUnicodeWhitespace(uint32_t cpt);
// Simple (one-to-one) lowercase mapping; `cpt` itself when there is none.
uint32_t ToLowerCodepoint(uint32_t cpt);
// The first code point of the canonical decomposition (NFD) of `cpt`, `cpt` itself when it has
// none: llama.cpp's unicode_cpts_normalize_nfd, which maps each code point to one (so "é" gives
// "e", its accent dropped rather than split off).
uint32_t NfdFirstCodepoint(uint32_t cpt);

}  // namespace sparrow::tokenizer
