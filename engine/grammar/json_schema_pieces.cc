#include "engine/grammar/json_schema_pieces.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "engine/grammar/utf8_ranges.h"

namespace sparrow::grammar {
namespace {

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, v);
  return buf;
}

std::string Utf8(uint32_t cp) {
  std::string s;
  for (uint8_t b : EncodeUtf8(cp)) s.push_back(static_cast<char>(b));
  return s;
}

// ---- integer ranges ----

bool AllDigit(std::string_view s, char d) {
  return s.find_first_not_of(d) == std::string::npos;
}

std::string DigitClass(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

// The numbers written with as many digits as x and y, from x to y (x <= y).
std::string SameLengthRange(const std::string& x, const std::string& y) {
  if (x == y) return GbnfLiteral(x);
  if (x.size() == 1) return DigitClass(x[0], y[0]);
  const std::string xr = x.substr(1), yr = y.substr(1);
  if (x[0] == y[0]) return GbnfLiteral(x.substr(0, 1)) + " (" + SameLengthRange(xr, yr) + ")";
  std::vector<std::string> alts;
  char mid_lo = static_cast<char>(x[0] + 1), mid_hi = static_cast<char>(y[0] - 1);
  if (AllDigit(xr, '0')) {
    mid_lo = x[0];
  } else {
    alts.push_back(GbnfLiteral(x.substr(0, 1)) + " (" +
                   SameLengthRange(xr, std::string(xr.size(), '9')) + ")");
  }
  const bool y_full = AllDigit(yr, '9');
  if (y_full) mid_hi = y[0];
  if (mid_lo <= mid_hi) alts.push_back(DigitClass(mid_lo, mid_hi) + AnyDigits(xr.size()));
  if (!y_full) {
    alts.push_back(GbnfLiteral(y.substr(0, 1)) + " (" +
                   SameLengthRange(std::string(yr.size(), '0'), yr) + ")");
  }
  return GbnfAlternatives(alts);
}

// Non-negative integers from a to b (b open when absent).
std::string NonNegativeRange(uint64_t a, std::optional<uint64_t> b) {
  const std::string as = std::to_string(a);
  std::vector<std::string> alts;
  if (!b) {
    alts.push_back(SameLengthRange(as, std::string(as.size(), '9')));
    alts.push_back("[1-9] [0-9]{" + std::to_string(as.size()) + ",}");
  } else {
    const std::string bs = std::to_string(*b);
    for (size_t len = as.size(); len <= bs.size(); ++len) {
      std::string lo = as;
      if (len != as.size()) {
        lo.assign(len, '0');
        lo[0] = '1';
      }
      const std::string hi = len == bs.size() ? bs : std::string(len, '9');
      alts.push_back(SameLengthRange(lo, hi));
    }
  }
  return GbnfAlternatives(alts);
}

// ---- regular expressions ----

class RegexConverter {
 public:
  RegexConverter(std::string_view p, int max_depth) : p_(p), max_depth_(max_depth) {}

  Result<std::string> Run() {
    if (!p_.empty() && p_[0] == '^') ++pos_;
    size_t end = p_.size();
    if (end > pos_ && p_[end - 1] == '$' && (end < 2 || p_[end - 2] != '\\')) --end;
    p_ = p_.substr(0, end);
    SPARROW_ASSIGN_OR_RETURN(std::string out, Alternation(0));
    if (pos_ < p_.size()) return Error("unmatched ')'");
    return out;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("pattern '" + std::string(p_) + "' at offset " + std::to_string(pos_) +
                           ": " + what);
  }
  Status Unsupported(const std::string& what) const {
    return sparrow::Unsupported("pattern '" + std::string(p_) + "' at offset " +
                                std::to_string(pos_) + ": " + what + " is not supported");
  }

  Result<std::string> Alternation(int depth) {
    if (depth > max_depth_) return Error("groups nested too deeply");
    std::string out = "(";
    while (true) {
      SPARROW_ASSIGN_OR_RETURN(std::string seq, Concatenation(depth));
      out += seq.empty() ? "\"\"" : seq;
      if (pos_ < p_.size() && p_[pos_] == '|') {
        ++pos_;
        out += " | ";
        continue;
      }
      return out + ")";
    }
  }

  Result<std::string> Concatenation(int depth) {
    std::string out;
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      SPARROW_ASSIGN_OR_RETURN(std::string atom, Atom(depth));
      SPARROW_ASSIGN_OR_RETURN(std::string quantified, Quantifier(std::move(atom)));
      out += (out.empty() ? "" : " ") + quantified;
    }
    return out;
  }

  Result<std::string> Quantifier(std::string atom) {
    if (pos_ >= p_.size()) return atom;
    const char c = p_[pos_];
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{' && pos_ + 1 < p_.size() && p_[pos_ + 1] >= '0' && p_[pos_ + 1] <= '9') {
      const size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos) return Error("unterminated '{'");
      const std::string_view body = p_.substr(pos_ + 1, close - pos_ - 1);
      if (body.find_first_not_of("0123456789,") != std::string_view::npos) {
        return Error("malformed repetition");
      }
      q = "{" + std::string(body) + "}";
      pos_ = close + 1;
    } else {
      return atom;
    }
    if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // lazy: the language is the same
    if (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?')) {
      return Unsupported("a possessive or doubled quantifier");
    }
    return "(" + atom + ")" + q;
  }

  Result<uint32_t> NextCodePoint() {
    const uint8_t b = static_cast<uint8_t>(p_[pos_]);
    const int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > p_.size()) return Error("invalid UTF-8");
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(p_[pos_ + i]) & 0x3F);
    pos_ += n;
    return cp;
  }

  Result<uint32_t> HexEscape(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[pos_]))) {
        return Error("expected " + std::to_string(digits) + " hex digits");
      }
      const char c = p_[pos_];
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  // A class escape (\d \w \s and their negations) as ranges, or false for other escapes.
  static bool ClassEscape(char e, std::vector<CodeRange>* out) {
    std::vector<CodeRange> r;
    switch (e | 0x20) {
      case 'd':
        r = {{'0', '9'}};
        break;
      case 'w':
        r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
        break;
      case 's':
        r = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
             {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
             {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
        break;
      default:
        return false;
    }
    if (e >= 'A' && e <= 'Z') r = NormalizeRanges(std::move(r), true);
    out->insert(out->end(), r.begin(), r.end());
    return true;
  }

  // After a backslash: one character, or ranges for a class escape.
  Result<uint32_t> EscapedChar(std::vector<CodeRange>* class_out, bool* is_class) {
    if (pos_ >= p_.size()) return Error("the pattern ends in a backslash");
    const char e = p_[pos_++];
    *is_class = ClassEscape(e, class_out);
    if (*is_class) return 0u;
    switch (e) {
      case 'n':
        return uint32_t{'\n'};
      case 't':
        return uint32_t{'\t'};
      case 'r':
        return uint32_t{'\r'};
      case 'f':
        return uint32_t{'\f'};
      case 'v':
        return uint32_t{'\v'};
      case '0':
        return 0u;
      case 'x':
        return HexEscape(2);
      case 'u':
        return HexEscape(4);
      case 'b':
      case 'B':
        return Unsupported("a word boundary");
      case 'c':
      case 'p':
      case 'P':
      case 'k':
        return Unsupported(std::string("'\\") + e + "'");
      default:
        if (e >= '1' && e <= '9') return Unsupported("a back-reference");
        return static_cast<uint32_t>(static_cast<uint8_t>(e));
    }
  }

  Result<std::string> Atom(int depth) {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (pos_ < p_.size() && p_[pos_] == '?') {
        return Unsupported("look-around or a named group");
      }
      SPARROW_ASSIGN_OR_RETURN(std::string inner, Alternation(depth + 1));
      if (pos_ >= p_.size() || p_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      return inner;
    }
    if (c == '[') return Class();
    if (c == '.') {
      ++pos_;
      return JsonClass(
          NormalizeRanges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, /*negate=*/true));
    }
    if (c == '*' || c == '+' || c == '?') return Error(std::string("'") + c + "' repeats nothing");
    if (c == '^' || c == '$') return Unsupported("an anchor inside the pattern");
    if (c == '\\') {
      ++pos_;
      std::vector<CodeRange> ranges;
      bool is_class = false;
      SPARROW_ASSIGN_OR_RETURN(uint32_t cp, EscapedChar(&ranges, &is_class));
      if (is_class) return JsonClass(NormalizeRanges(std::move(ranges), false));
      return JsonChar(cp);
    }
    SPARROW_ASSIGN_OR_RETURN(uint32_t cp, NextCodePoint());
    return JsonChar(cp);
  }

  Result<std::string> Class() {
    ++pos_;  // '['
    bool negate = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    while (true) {
      if (pos_ >= p_.size()) return Error("unterminated '['");
      if (p_[pos_] == ']') break;
      SPARROW_ASSIGN_OR_RETURN(std::optional<uint32_t> lo, ClassChar(&ranges));
      if (lo && pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        SPARROW_ASSIGN_OR_RETURN(std::optional<uint32_t> hi, ClassChar(&ranges));
        if (!hi) return Error("a class escape cannot end a range");
        if (*hi < *lo) return Error("range out of order");
        ranges.push_back({*lo, *hi});
      } else if (lo) {
        ranges.push_back({*lo, *lo});
      }
    }
    ++pos_;
    auto normal = NormalizeRanges(std::move(ranges), negate);
    if (normal.empty()) return Error("the class matches nothing");
    return JsonClass(normal);
  }

  // One member of a class: a character, or (nullopt) a class escape added to `ranges`.
  Result<std::optional<uint32_t>> ClassChar(std::vector<CodeRange>* ranges) {
    if (p_[pos_] == '\\') {
      ++pos_;
      if (pos_ < p_.size() && p_[pos_] == 'b') {
        ++pos_;
        return std::optional<uint32_t>(uint32_t{'\b'});
      }
      bool is_class = false;
      SPARROW_ASSIGN_OR_RETURN(uint32_t cp, EscapedChar(ranges, &is_class));
      if (is_class) return std::optional<uint32_t>();
      return std::optional<uint32_t>(cp);
    }
    SPARROW_ASSIGN_OR_RETURN(uint32_t cp, NextCodePoint());
    return std::optional<uint32_t>(cp);
  }

  // A character as it must appear inside a JSON string.
  static std::string JsonChar(uint32_t cp) {
    if (cp == '"') return GbnfLiteral("\\\"");
    if (cp == '\\') return GbnfLiteral("\\\\");
    if (cp == '\n') return GbnfLiteral("\\n");
    if (cp == '\t') return GbnfLiteral("\\t");
    if (cp == '\r') return GbnfLiteral("\\r");
    if (cp < 0x20) return GbnfLiteral("\\u" + Hex(cp, 4));
    return GbnfLiteral(Utf8(cp));
  }

  // A set of characters inside a JSON string: the plain ones as a class, the ones JSON must
  // escape as their escapes.
  static std::string JsonClass(const std::vector<CodeRange>& ranges) {
    std::vector<std::string> alts;
    std::string plain;
    for (const CodeRange& r : ranges) {
      for (uint32_t lo = r.lo; lo <= r.hi;) {
        if (lo < 0x20 || lo == '"' || lo == '\\') {
          alts.push_back(JsonChar(lo));
          ++lo;
          continue;
        }
        uint32_t hi = r.hi;
        if (lo < '"' && hi >= '"') hi = '"' - 1;
        if (lo < '\\' && hi >= '\\') hi = '\\' - 1;
        plain += "\\U" + Hex(lo, 8) + "-\\U" + Hex(hi, 8);
        lo = hi + 1;
        if (hi == kMaxCodePoint) break;
      }
    }
    if (!plain.empty()) alts.insert(alts.begin(), "[" + plain + "]");
    if (alts.size() == 1) return alts[0];
    return GbnfAlternatives(alts);
  }

  std::string_view p_;
  int max_depth_;
  size_t pos_ = 0;
};

}  // namespace

std::string GbnfLiteral(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x" + Hex(c, 2);
    } else {
      out.push_back(ch);
    }
  }
  return out + "\"";
}

std::string GbnfAlternatives(const std::vector<std::string>& alts) {
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) {
    if (i) out += " | ";
    out += alts[i];
  }
  return out + ")";
}

std::string IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  constexpr int64_t kMin = -INT64_MAX;  // so that every magnitude fits
  if (lo && *lo < kMin) lo = kMin;
  if (hi && *hi < kMin) hi = kMin;
  std::vector<std::string> alts;
  // Negative part: -1 down to lo, written as '-' and the magnitude.
  if (!lo || *lo < 0) {
    const uint64_t mag_lo = (hi && *hi < 0) ? static_cast<uint64_t>(-*hi) : 1;
    std::optional<uint64_t> mag_hi;
    if (lo) mag_hi = static_cast<uint64_t>(-*lo);
    alts.push_back("\"-\" " + NonNegativeRange(mag_lo, mag_hi));
  }
  if (!hi || *hi >= 0) {
    const uint64_t from = (lo && *lo > 0) ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> to;
    if (hi) to = static_cast<uint64_t>(*hi);
    alts.push_back(NonNegativeRange(from, to));
  }
  return GbnfAlternatives(alts);
}

std::string NumberRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  constexpr int64_t kMin = -INT64_MAX + 1;  // so that -lo - 1 and every magnitude fit
  if (lo && *lo < kMin) lo = kMin;
  if (hi && *hi < kMin) hi = kMin;
  const std::string fraction = " \".\" [0-9]{1,16}";
  std::vector<std::string> alts = {IntegerRangeGbnf(lo, hi)};
  // I.F for 0 <= I <= hi - 1 lies in [I, I + 1) within the range.
  const int64_t from = lo ? std::max<int64_t>(*lo, 0) : 0;
  if (!hi || *hi - 1 >= from) {
    std::optional<int64_t> to;
    if (hi) to = *hi - 1;
    alts.push_back(IntegerRangeGbnf(from, to) + fraction);
  }
  // -M.F for M >= 1 lies in (-M - 1, -M]: within the range when M + 1 <= -lo and -M <= hi.
  const int64_t m_from = hi ? std::max<int64_t>(1, -*hi) : 1;
  if (!lo || -*lo - 1 >= m_from) {
    std::optional<int64_t> m_to;
    if (lo) m_to = -*lo - 1;
    alts.push_back("\"-\" " + IntegerRangeGbnf(m_from, m_to) + fraction);
  }
  // -0.F lies in (-1, 0].
  if ((!lo || *lo <= -1) && (!hi || *hi >= 0)) alts.push_back("\"-0\"" + fraction);
  return GbnfAlternatives(alts);
}

Result<std::string> RegexToGbnf(std::string_view pattern, int max_depth) {
  return RegexConverter(pattern, max_depth).Run();
}

}  // namespace sparrow::grammar
