#include "engine/tokenizer/pretokenizer_rules.h"

#include <algorithm>
#include <iterator>

namespace sparrow::tokenizer {
namespace {

constexpr uint32_t kNoCpt = 0xFFFFFFFF;

uint8_t Collapse(uint32_t cpt, const CodepointFlags& f) {
  if (cpt < 0x80) return static_cast<uint8_t>(cpt);
  if (f.whitespace) return 0x0B;
  switch (f.category) {
    case CodepointFlags::kNumber:
      return 0xD1;
    case CodepointFlags::kLetter:
      return 0xD2;
    case CodepointFlags::kPunctuation:
      return 0xD3;
    case CodepointFlags::kMark:
      return 0xD4;
    case CodepointFlags::kSymbol:
      return 0xD5;
    default:
      return 0xD0;
  }
}

// Character classes as std::regex evaluated them in the "C" locale: \s is ASCII-only, and
// \p{..} on ASCII was replaced by fixed ASCII sets (note '~' is in no \p{S} set).
bool ReSpace(uint32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D);
}
bool ReLetter(uint32_t c) {
  return c == 0xD2 || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool ReNumber(uint32_t c) {
  return c == 0xD1 || (c >= '0' && c <= '9');
}
bool ReDigit(uint32_t c) {
  return c >= '0' && c <= '9';
}
bool IsOneOf(uint32_t c, std::string_view set) {
  return c < 0x80 && set.find(static_cast<char>(c)) != std::string_view::npos;
}
bool RePunct(uint32_t c) {
  return c == 0xD3 || IsOneOf(c, "!\"#%&'()*,-./:;?@[\\]_{}");
}
bool RePunctRun(uint32_t c) {
  return RePunct(c) || IsOneOf(c, "$+<=>^~|");
}
bool RePunctRunFalcon(uint32_t c) {
  return RePunctRun(c) || c == '`';
}
bool ReNewline(uint32_t c) {
  return c == '\r' || c == '\n';
}

struct Range {
  uint32_t lo, hi;
};

bool InRanges(uint32_t c, const Range* begin, const Range* end) {
  // Ranges are sorted and disjoint.
  const Range* it =
      std::upper_bound(begin, end, c, [](uint32_t v, const Range& r) { return v < r.lo; });
  return it != begin && c <= (it - 1)->hi;
}

// The deepseek-llm letter class, as code point ranges.
constexpr Range kDeepseekLetterRanges[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
constexpr Range kDeepseekPunctRanges[] = {
    {0x21, 0x2F},     {0x3A, 0x7E},     {0x2018, 0x201F},
    {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};
constexpr Range kCjkRanges[] = {{0x800, 0x9FA5}, {0xAC00, 0xD7FF}};

bool DeepseekLetter(uint32_t c) {
  return InRanges(c, std::begin(kDeepseekLetterRanges), std::end(kDeepseekLetterRanges));
}
bool DeepseekPunct(uint32_t c) {
  return InRanges(c, std::begin(kDeepseekPunctRanges), std::end(kDeepseekPunctRanges));
}
bool Cjk(uint32_t c) {
  return InRanges(c, std::begin(kCjkRanges), std::end(kCjkRanges));
}
bool BloomWordChar(uint32_t c) {
  if (ReSpace(c)) return false;
  switch (c) {
    case '(':
    case ')':
    case '|':
    case '.':
    case ',':
    case '!':
    case '?':
    case 0x2026:
    case 0x3002:
    case 0xFF0C:
    case 0x3001:
    case 0x0964:
    case 0x06D4:
    case 0x060C:
      return false;
    default:
      return true;
  }
}

// Which view of the text a regex rule reads.
enum class View { kCollapsed, kWide };

// A regex rule, read as "the length of the match starting at pos, or 0".
class Matcher {
 public:
  Matcher(const SplitText& t, View view, size_t end) : t_(t), view_(view), end_(end) {}
  uint32_t at(size_t i) const {
    if (i >= end_) return kNoCpt;
    return view_ == View::kCollapsed ? t_.collapsed[i] : t_.wide(i);
  }
  template <typename Pred>
  size_t RunLength(size_t pos, Pred pred) const {
    size_t n = 0;
    while (pos + n < end_ && pred(at(pos + n))) ++n;
    return n;
  }
  // \s?X+
  template <typename Pred>
  size_t OptionalSpaceThenRun(size_t pos, Pred pred) const {
    if (ReSpace(at(pos)) && pos + 1 < end_ && pred(at(pos + 1)))
      return 1 + RunLength(pos + 1, pred);
    return RunLength(pos, pred);
  }
  size_t end() const { return end_; }

 private:
  const SplitText& t_;
  View view_;
  size_t end_;
};

bool IsQwenOther(uint32_t c) {
  return c != kNoCpt && !ReSpace(c) && !ReLetter(c) && !ReNumber(c);
}

size_t MatchQwen2(const Matcher& m, size_t pos) {
  const uint32_t c = m.at(pos);
  if (c == '\'' && pos + 1 < m.end()) {
    const uint32_t n = m.at(pos + 1) | 0x20;  // ASCII case fold; only letters can match below
    const uint32_t n2 = pos + 2 < m.end() ? (m.at(pos + 2) | 0x20) : kNoCpt;
    if (n == 's' || n == 't' || n == 'm' || n == 'd') return 2;
    if ((n == 'r' && n2 == 'e') || (n == 'v' && n2 == 'e') || (n == 'l' && n2 == 'l')) return 3;
  }
  if (ReLetter(c)) return m.RunLength(pos, ReLetter);
  if (!ReNewline(c) && !ReNumber(c) && ReLetter(m.at(pos + 1))) {
    return 1 + m.RunLength(pos + 1, ReLetter);
  }
  if (ReNumber(c)) return 1;
  size_t len = 0;
  if (c == ' ' && IsQwenOther(m.at(pos + 1))) {
    len = 1 + m.RunLength(pos + 1, IsQwenOther);
  } else if (IsQwenOther(c)) {
    len = m.RunLength(pos, IsQwenOther);
  }
  if (len > 0) return len + m.RunLength(pos + len, ReNewline);
  const size_t ws = m.RunLength(pos, ReSpace);
  if (ws == 0) return 0;
  for (size_t k = ws; k > 0; --k) {  // \s*[\r\n]+ ends after the run's last \r or \n
    if (ReNewline(m.at(pos + k - 1))) return k;
  }
  if (pos + ws == m.end()) return ws;  // \s+(?!\S) at the end of the piece
  if (ws >= 2) return ws - 1;          // \s+(?!\S) leaves the last space to the next word
  return ws;                           // \s+
}

size_t Match(SplitRule rule, const Matcher& m, size_t pos) {
  switch (rule) {
    case SplitRule::kQwen2:
      return MatchQwen2(m, pos);
    case SplitRule::kPunctRun:
      return m.RunLength(pos, RePunctRun);
    case SplitRule::kPunctRunFalcon:
      return m.RunLength(pos, RePunctRunFalcon);
    case SplitRule::kNumberRun:
      return m.RunLength(pos, ReNumber);
    case SplitRule::kSingleNumber:
      return ReNumber(m.at(pos)) ? 1 : 0;
    case SplitRule::kThreeDigits:
      return ReDigit(m.at(pos)) && ReDigit(m.at(pos + 1)) && ReDigit(m.at(pos + 2)) ? 3 : 0;
    case SplitRule::kNewline:
      return ReNewline(m.at(pos)) ? 1 : 0;
    case SplitRule::kSpaceLetters:
      return m.OptionalSpaceThenRun(pos, ReLetter);
    case SplitRule::kSpacePunct:
      return m.OptionalSpaceThenRun(pos, RePunct);
    case SplitRule::kDeepseekLetters:
      return m.OptionalSpaceThenRun(pos, DeepseekLetter);
    case SplitRule::kDeepseekPunct:
      return m.OptionalSpaceThenRun(pos, DeepseekPunct);
    case SplitRule::kCjk:
      return m.RunLength(pos, Cjk);
    case SplitRule::kBloom:
      if (m.at(pos) == ' ' && BloomWordChar(m.at(pos + 1)) && m.at(pos + 1) != kNoCpt) {
        return 1 + m.RunLength(pos + 1, BloomWordChar);
      }
      return m.RunLength(pos, BloomWordChar);
    default:
      return 0;  // handled elsewhere
  }
}

View ViewOf(SplitRule rule) {
  switch (rule) {
    case SplitRule::kThreeDigits:
    case SplitRule::kNewline:
    case SplitRule::kDeepseekLetters:
    case SplitRule::kDeepseekPunct:
    case SplitRule::kTrailingSpace:
    case SplitRule::kCjk:
    case SplitRule::kBloom:
      return View::kWide;
    default:
      return View::kCollapsed;
  }
}

// Emulates std::regex_iterator: leftmost matches in order; text between matches is one piece.
void SplitByRegex(SplitRule rule, const SplitText& t, size_t begin, size_t end,
                  std::vector<size_t>* lengths) {
  const Matcher m(t, ViewOf(rule), end);
  size_t gap = begin;
  size_t pos = begin;
  if (rule == SplitRule::kTrailingSpace) {
    // \s+$ can only match the trailing whitespace run; find it directly.
    pos = end;
    while (pos > begin && ReSpace(m.at(pos - 1))) --pos;
    if (pos > begin) lengths->push_back(pos - begin);
    if (pos < end) lengths->push_back(end - pos);
    return;
  }
  while (pos < end) {
    const size_t len = Match(rule, m, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    if (pos > gap) lengths->push_back(pos - gap);
    lengths->push_back(len);
    pos += len;
    gap = pos;
  }
  if (gap < end) lengths->push_back(end - gap);
}

}  // namespace

SplitText::SplitText(std::vector<uint32_t> cpts_in) : cpts(std::move(cpts_in)) {
  flags.reserve(cpts.size());
  collapsed.reserve(cpts.size());
  for (uint32_t cpt : cpts) {
    flags.push_back(GetCodepointFlags(cpt));
    collapsed.push_back(Collapse(cpt, flags.back()));
  }
}

void ApplySplitRule(SplitRule rule, const SplitText& text, size_t begin, size_t end,
                    std::vector<size_t>* lengths) {
  switch (rule) {
    case SplitRule::kGpt2:
      SplitGpt2(text, begin, end, lengths);
      return;
    case SplitRule::kLlama3:
      SplitLlama3(text, begin, end, lengths);
      return;
    default:
      SplitByRegex(rule, text, begin, end, lengths);
      return;
  }
}

}  // namespace sparrow::tokenizer
