#include "engine/tokenizer/detokenize.h"

namespace sparrow::tokenizer {

std::string EscapeSpmSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (char c : text) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string_view Piece(const Vocab& vocab, TokenId id, bool special) {
  if (!vocab.Contains(id)) return {};
  if (!special && (vocab.attr(id) & (kAttrUnknown | kAttrControl))) return {};
  return vocab.piece_with_special(id);
}

std::string Detokenize(const Vocab& vocab, std::span<const TokenId> ids, bool remove_special,
                       bool unparse_special) {
  bool remove_space = vocab.add_space_prefix();
  if (remove_special && vocab.add_bos() && !ids.empty() &&
      ids.front() == vocab.special(SpecialToken::kBos)) {
    remove_space = false;  // the text began after BOS; keep its space
    ids = ids.subspan(1);
  }
  if (remove_special && vocab.add_eos() && !ids.empty() &&
      ids.back() == vocab.special(SpecialToken::kEos)) {
    ids = ids.first(ids.size() - 1);
  }
  std::string text;
  for (TokenId id : ids) {
    std::string_view p = Piece(vocab, id, unparse_special);
    // Only the first token may lose one leading space.
    if (remove_space && !p.empty() && p.front() == ' ') p.remove_prefix(1);
    remove_space = false;
    text.append(p);
  }
  if (vocab.clean_spaces()) CleanUpSpaces(&text);
  return text;
}

void CleanUpSpaces(std::string* text) {
  std::string& t = *text;
  // Each pass compacts in place; reads at i - 1 and i + 1 see the input of that pass because
  // writes never overtake the read position.
  size_t n = t.size();
  size_t w = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --w;
    t[w++] = x;
  }

  n = w;
  w = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --w;            // drop the space before
      t[++i] = '\0';  // and skip the one after
    }
    t[w++] = x;
  }

  n = w;
  w = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --w;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --w;
      }
    }
    t[w++] = x;
  }
  t.resize(w);
}

}  // namespace sparrow::tokenizer
