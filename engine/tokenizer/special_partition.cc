#include "engine/tokenizer/special_partition.h"

namespace sparrow::tokenizer {
namespace {

// isspace() in the "C" locale, which is what strip attributes use in llama.cpp.
bool IsCSpace(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

bool Overlaps(std::span<const TextRange> ranges, size_t begin, size_t end) {
  for (const TextRange& r : ranges) {
    if (begin < r.offset + r.length && r.offset < end) return true;
  }
  return false;
}

// Replaces every occurrence of `id` inside the text fragments of `in` by a token fragment,
// except occurrences that overlap `literal`.
void SplitOn(const Vocab& vocab, TokenId id, std::string_view text, const std::vector<Fragment>& in,
             std::span<const TextRange> literal, std::vector<Fragment>* out) {
  const std::string& needle = vocab.text(id);
  const uint32_t attr = vocab.attr(id);
  for (const Fragment& frag : in) {
    if (frag.token != kNoToken) {
      out->push_back(frag);
      continue;
    }
    size_t base = frag.offset;
    size_t len = frag.length;
    size_t from = 0;  // relative to base: where to look for the next occurrence
    while (len > 0) {
      const size_t match = text.substr(base, len).find(needle, from);
      if (match == std::string_view::npos) break;
      if (Overlaps(literal, base + match, base + match + needle.size())) {
        from = match + 1;
        continue;
      }
      from = 0;
      size_t left = match;  // relative to base
      if (attr & kAttrLStrip) {
        while (left > 0 && IsCSpace(text[base + left - 1])) --left;
      }
      if (left > 0) out->push_back({kNoToken, base, left});
      out->push_back({id, 0, 0});
      size_t right = base + match + needle.size();
      size_t right_len = base + len - right;
      if (attr & kAttrRStrip) {
        while (right_len > 0 && IsCSpace(text[right])) {
          ++right;
          --right_len;
        }
      }
      base = right;
      len = right_len;
    }
    if (len > 0) out->push_back({kNoToken, base, len});
  }
}

}  // namespace

std::vector<Fragment> PartitionSpecialTokens(const Vocab& vocab, std::string_view text,
                                             bool parse_special,
                                             std::span<const TextRange> literal) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (TokenId id : vocab.special_tokens()) {
    const bool control = vocab.attr(id) & (kAttrControl | kAttrUnknown);
    if (!parse_special && control) continue;
    if (text.find(vocab.text(id)) == std::string_view::npos) continue;  // the common case
    next.clear();
    // User-defined tokens match in literal text too, as they do without parse_special.
    SplitOn(vocab, id, text, frags, control ? literal : std::span<const TextRange>(), &next);
    frags.swap(next);
  }
  return frags;
}

}  // namespace sparrow::tokenizer
