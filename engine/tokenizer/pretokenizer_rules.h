#pragma once
// Internal to the pre-tokenizer: the individual split rules. Each rule splits one piece
// [begin, end) of the text into consecutive lengths that cover it. Rules named after a regex
// reproduce how llama.cpp evaluates that regex (std::regex over a category-collapsed copy of the
// text), including its quirks; kGpt2 and kLlama3 reproduce llama.cpp's hand-written splitters.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {

// The decoded text plus the per-code-point views the rules test.
struct SplitText {
  std::vector<uint32_t> cpts;
  std::vector<CodepointFlags> flags;
  // What std::regex saw in llama.cpp when the regex used \p{..}: ASCII as is, non-ASCII
  // whitespace as 0x0B, other non-ASCII as one byte per category (0xD0 other, 0xD1 N, 0xD2 L,
  // 0xD3 P, 0xD4 M, 0xD5 S).
  std::vector<uint8_t> collapsed;

  explicit SplitText(std::vector<uint32_t> cpts);
  // What std::wregex saw when the regex had no \p{..}: the code point, with non-ASCII
  // whitespace replaced by 0x0B.
  uint32_t wide(size_t i) const { return cpts[i] > 0x7F && flags[i].whitespace ? 0x0B : cpts[i]; }
};

enum class SplitRule {
  kGpt2,            // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  kLlama3,          // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
  kQwen2,           // as llama3 but \p{N} single digits, evaluated as a regex
  kPunctRun,        // [\p{P}\$\+<=>\^~\|]+
  kPunctRunFalcon,  // [\p{P}\$\+<=>\^~\|`]+
  kNumberRun,       // \p{N}+
  kSingleNumber,    // \p{N}
  kThreeDigits,     // [0-9][0-9][0-9]
  kNewline,         // [\r\n]
  kSpaceLetters,    // \s?\p{L}+
  kSpacePunct,      // \s?\p{P}+
  kDeepseekLetters,  // \s?[A-Za-zµÀ-Ö...]+ (cased letters of many scripts)
  kDeepseekPunct,    // \s?[!-/:-~！-／：-～‘-‟　-。]+
  kTrailingSpace,    // \s+$
  kCjk,              // [一-龥ࠀ-一가-퟿]+
  kBloom,            //  ?[^(\s|.,!?…。，、।۔،)]+
};

// The hand-written splitters behind SplitRule::kGpt2 and kLlama3 (pretokenizer_custom.cc).
void SplitGpt2(const SplitText& text, size_t begin, size_t end, std::vector<size_t>* lengths);
void SplitLlama3(const SplitText& text, size_t begin, size_t end, std::vector<size_t>* lengths);

// Appends to `lengths` the split of [begin, end) under `rule`; the lengths sum to end - begin.
void ApplySplitRule(SplitRule rule, const SplitText& text, size_t begin, size_t end,
                    std::vector<size_t>* lengths);

}  // namespace sparrow::tokenizer
