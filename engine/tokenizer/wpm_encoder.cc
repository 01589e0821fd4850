#include "engine/tokenizer/wpm_encoder.h"

#include <algorithm>

#include "engine/tokenizer/unicode.h"

namespace sparrow::tokenizer {
namespace {

// The CJK ideograph blocks BERT's BasicTokenizer splits one by one (with HF's 0x2B920 start).
bool IsChineseChar(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace

std::vector<std::string> WpmWords(const Vocab& vocab, std::string_view text) {
  std::vector<std::string> words(1);
  for (uint32_t cpt : DecodeUtf8Lossy(text)) {
    if (vocab.strip_accents()) cpt = NfdFirstCodepoint(cpt);
    const CodepointFlags flags = GetCodepointFlags(cpt);
    if (flags.whitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cpt == 0 || cpt == kReplacementChar || flags.category == CodepointFlags::kControl) continue;
    if (vocab.strip_accents() && flags.is_mark()) continue;
    const uint32_t out = vocab.lowercase() ? ToLowerCodepoint(cpt) : cpt;
    if (flags.is_punctuation() || (cpt < 0x7F && flags.is_symbol()) || IsChineseChar(cpt)) {
      // A word of its own.
      if (!words.back().empty()) words.emplace_back();
      AppendUtf8(out, &words.back());
      words.emplace_back();
    } else {
      AppendUtf8(out, &words.back());
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  static constexpr std::string_view kWordStart = "\xE2\x96\x81";
  std::string word;
  for (const std::string& w : WpmWords(vocab, text)) {
    word.assign(kWordStart);
    word += w;
    const auto n = static_cast<int64_t>(word.size());
    const size_t first = out->size();
    // Greedy longest match in bytes, as llama.cpp (a match may end inside a character).
    for (int64_t i = 0; i < n; ++i) {
      bool matched = false;
      for (int64_t j = std::min<int64_t>(n, i + vocab.max_token_len() + 1); j > i; --j) {
        const TokenId id = vocab.Find(std::string_view(word).substr(i, j - i));
        if (id != kNoToken) {
          out->push_back(id);
          matched = true;
          i = j - 1;
          break;
        }
      }
      if (!matched) {  // the whole word is unknown
        out->resize(first);
        break;
      }
    }
    if (out->size() == first) out->push_back(vocab.special(SpecialToken::kUnk));
  }
}

}  // namespace sparrow::tokenizer
