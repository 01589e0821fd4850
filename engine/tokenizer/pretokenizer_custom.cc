// llama.cpp's two hand-written splitters (for the GPT-2 and Llama-3 regexes), reproduced with
// their exact behaviour, which differs from the regexes in corner cases: every character no
// alternative matches becomes its own piece, and whitespace uses the Unicode White_Space set.
#include "engine/tokenizer/pretokenizer_rules.h"

namespace sparrow::tokenizer {
namespace {

constexpr uint32_t kNoCpt = 0xFFFFFFFF;

bool IsNewline(uint32_t c) {
  return c == '\r' || c == '\n';
}

// Shared by the two hand-written splitters: bounds-checked access and piece emission.
class Cursor {
 public:
  Cursor(const SplitText& t, size_t begin, size_t end, std::vector<size_t>* lengths)
      : t_(t), end_(end), prev_(begin), lengths_(lengths) {}
  uint32_t cpt(size_t i) const { return i < end_ ? t_.cpts[i] : kNoCpt; }
  CodepointFlags flags(size_t i) const { return i < end_ ? t_.flags[i] : CodepointFlags{}; }
  // Closes the piece ending at `end`; returns its length.
  size_t Emit(size_t end) {
    const size_t len = end - prev_;
    if (len > 0) lengths_->push_back(len);
    prev_ = end;
    return len;
  }
  size_t end() const { return end_; }

 private:
  const SplitText& t_;
  size_t end_, prev_;
  std::vector<size_t>* lengths_;
};

bool IsOther(const CodepointFlags& f) {
  return f.any() && !f.whitespace && !f.is_letter() && !f.is_number();
}

// Contractions 's 't 'm 'd 're 've 'll; returns the length matched at pos (0 if none).
size_t MatchContraction(const Cursor& c, size_t pos, bool fold_case) {
  if (c.cpt(pos) != '\'' || pos + 1 >= c.end()) return 0;
  auto next = [&](size_t i) { return fold_case ? ToLowerCodepoint(c.cpt(i)) : c.cpt(i); };
  const uint32_t n = next(pos + 1);
  if (n == 's' || n == 't' || n == 'm' || n == 'd') return 2;
  if (pos + 2 < c.end()) {
    const uint32_t n2 = next(pos + 2);
    if ((n == 'r' && n2 == 'e') || (n == 'v' && n2 == 'e') || (n == 'l' && n2 == 'l')) return 3;
  }
  return 0;
}

size_t WhitespaceRun(const Cursor& c, size_t pos) {
  size_t n = 0;
  while (c.flags(pos + n).whitespace) ++n;
  return n;
}

}  // namespace

void SplitGpt2(const SplitText& t, size_t begin, size_t end, std::vector<size_t>* lengths) {
  Cursor c(t, begin, end, lengths);
  size_t pos = begin;
  while (pos < end) {
    if (const size_t n = MatchContraction(c, pos, /*fold_case=*/false)) {
      pos += c.Emit(pos + n);
      continue;
    }
    const bool space = c.cpt(pos) == ' ';
    const CodepointFlags f2 = space ? c.flags(pos + 1) : c.flags(pos);
    if (f2.is_letter() || f2.is_number() || IsOther(f2)) {
      // ' ?' then a run of the same class as the first non-space character.
      auto same = [&](const CodepointFlags& f) {
        return f2.is_letter() ? f.is_letter() : f2.is_number() ? f.is_number() : IsOther(f);
      };
      pos += space ? 1 : 0;
      while (same(c.flags(pos))) ++pos;
      c.Emit(pos);
      continue;
    }
    const size_t ws = WhitespaceRun(c, pos);
    if (ws > 1 && pos + ws < end) {
      pos += ws - 1;
    } else if (ws > 0) {
      pos += ws;
    } else {
      ++pos;
    }
    c.Emit(pos);
  }
}

void SplitLlama3(const SplitText& t, size_t begin, size_t end, std::vector<size_t>* lengths) {
  Cursor c(t, begin, end, lengths);
  size_t pos = begin;
  while (pos < end) {
    if (const size_t n = MatchContraction(c, pos, /*fold_case=*/true)) {
      pos += c.Emit(pos + n);
      continue;
    }
    const uint32_t cpt = c.cpt(pos);
    const CodepointFlags f = c.flags(pos);
    if (!IsNewline(cpt) && !f.is_number() && (f.is_letter() || c.flags(pos + 1).is_letter())) {
      ++pos;
      while (c.flags(pos).is_letter()) ++pos;
      c.Emit(pos);
      continue;
    }
    if (f.is_number()) {  // \p{N}{1,3}
      size_t start = pos;
      while (c.flags(pos).is_number()) {
        if (++pos - start >= 3) {
          c.Emit(pos);
          start = pos;
        }
      }
      c.Emit(pos);
      continue;
    }
    const CodepointFlags f2 = cpt == ' ' ? c.flags(pos + 1) : f;
    // llama.cpp tests the first character's flags (f), not f2, for being defined here.
    if (!f2.whitespace && !f2.is_letter() && !f2.is_number() && f.any()) {
      pos += cpt == ' ' ? 1 : 0;
      while (IsOther(c.flags(pos))) ++pos;
      while (IsNewline(c.cpt(pos))) ++pos;
      c.Emit(pos);
      continue;
    }
    const size_t ws = WhitespaceRun(c, pos);
    size_t last_newline_end = 0;
    for (size_t k = 0; k < ws; ++k) {
      if (IsNewline(c.cpt(pos + k))) last_newline_end = pos + k + 1;
    }
    if (last_newline_end > 0) {
      pos = last_newline_end;
    } else if (ws > 1 && pos + ws < end) {
      pos += ws - 1;
    } else if (ws > 0) {
      pos += ws;
    } else {
      ++pos;
    }
    c.Emit(pos);
  }
}

}  // namespace sparrow::tokenizer
