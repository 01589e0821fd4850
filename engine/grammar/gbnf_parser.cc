#include "engine/grammar/gbnf_parser.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/grammar/utf8_ranges.h"

namespace sparrow::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

  Result<Grammar> Run() {
    if (text_.size() > limits_.max_text_bytes) {
      return InvalidArgument("grammar: " + std::to_string(text_.size()) +
                             " bytes, more than the limit of " +
                             std::to_string(limits_.max_text_bytes));
    }
    SkipSpace();
    if (pos_ == text_.size()) return Error("the grammar has no rules");
    while (pos_ < text_.size()) {
      const size_t name_pos = pos_;
      const std::string_view name = ReadName();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace();
      if (text_.substr(pos_, 3) != "::=") {
        return Error("expected '::=' after rule name '" + std::string(name) + "'");
      }
      pos_ += 3;
      const uint32_t id = RuleId(name, name_pos);
      if (defined_[id]) {
        pos_ = name_pos;
        return Error("rule '" + std::string(name) + "' is defined twice");
      }
      defined_[id] = true;
      std::vector<Sequence> alts;
      SPARROW_RETURN_IF_ERROR(ParseAlternatives(0, &alts));
      if (pos_ < text_.size() && text_[pos_] == ')') return Error("unmatched ')'");
      rules_[id] = std::move(alts);
    }
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) {
        pos_ = first_use_[r];
        return Error("rule '" + names_[r] + "' is used but never defined");
      }
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) {
      return InvalidArgument("grammar: there is no rule named 'root' to start from");
    }
    return Grammar::Create(std::move(rules_), std::move(names_), root->second);
  }

 private:
  Status Error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgument("grammar: line " + std::to_string(line) + ", column " +
                           std::to_string(col) + ": " + what);
  }

  // White space, newlines included, and comments.
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view ReadName() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // True when the text at pos_ is `name ::=`: the start of the next rule.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() &&
           (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) {
      ++p;
    }
    return text_.substr(p, 3) == "::=";
  }

  uint32_t RuleId(std::string_view name, size_t use_pos) {
    auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<uint32_t>(rules_.size()));
    if (inserted) {
      rules_.emplace_back();
      names_.emplace_back(name);
      defined_.push_back(false);
      first_use_.push_back(use_pos);
    }
    return it->second;
  }

  Result<uint32_t> NewRule(std::vector<Sequence> alts, const std::string& hint) {
    if (rules_.size() >= limits_.max_rules) {
      return Error("more than " + std::to_string(limits_.max_rules) + " rules");
    }
    const uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.push_back(std::move(alts));
    names_.push_back(hint + "-" + std::to_string(id));
    defined_.push_back(true);
    first_use_.push_back(pos_);
    return id;
  }

  Status CountSymbols(size_t n) {
    symbols_ += n;
    if (symbols_ > limits_.max_symbols) {
      return Error("the grammar grows past " + std::to_string(limits_.max_symbols) +
                   " symbols (repetitions are expanded)");
    }
    return Status::Ok();
  }

  Status ParseAlternatives(int depth, std::vector<Sequence>* alts) {
    if (depth > limits_.max_nesting) {
      return Error("groups nested deeper than " + std::to_string(limits_.max_nesting));
    }
    while (true) {
      Sequence seq;
      SPARROW_RETURN_IF_ERROR(ParseSequence(depth, &seq));
      alts->push_back(std::move(seq));
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return Status::Ok();
    }
  }

  Status ParseSequence(int depth, Sequence* seq) {
    Sequence last;  // the element postfix operators apply to
    bool have_last = false;
    auto flush = [&] {
      seq->insert(seq->end(), last.begin(), last.end());
      last.clear();
      have_last = false;
    };
    while (true) {
      SkipSpace();
      if (pos_ == text_.size()) break;
      const char c = text_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) return Error(std::string("'") + c + "' has nothing to repeat");
        uint32_t min = 0;
        std::optional<uint32_t> max;
        if (c == '*') {
          ++pos_;
        } else if (c == '+') {
          min = 1;
          ++pos_;
        } else if (c == '?') {
          max = 1;
          ++pos_;
        } else {
          SPARROW_RETURN_IF_ERROR(ParseBraces(&min, &max));
        }
        SPARROW_ASSIGN_OR_RETURN(last, Repeat(std::move(last), min, max));
        flush();
        continue;
      }
      if (AtRuleStart()) break;
      flush();
      SPARROW_RETURN_IF_ERROR(ParseElement(depth, &last));
      have_last = true;
    }
    flush();
    return CountSymbols(seq->size() + 1);
  }

  Status ParseElement(int depth, Sequence* out) {
    const char c = text_[pos_];
    if (c == '"') return ParseLiteral(out);
    if (c == '[') return ParseClass(out);
    if (c == '.') {
      ++pos_;
      return LowerClass({{0, kMaxCodePoint}}, out);
    }
    if (c == '(') {
      ++pos_;
      std::vector<Sequence> alts;
      SPARROW_RETURN_IF_ERROR(ParseAlternatives(depth + 1, &alts));
      if (pos_ == text_.size() || text_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      if (alts.size() == 1) {
        *out = std::move(alts[0]);
        return Status::Ok();
      }
      SPARROW_ASSIGN_OR_RETURN(uint32_t id, NewRule(std::move(alts), "group"));
      *out = {Symbol::Rule(id)};
      return Status::Ok();
    }
    if (IsNameChar(c)) {
      const size_t at = pos_;
      const std::string_view name = ReadName();
      *out = {Symbol::Rule(RuleId(name, at))};
      return Status::Ok();
    }
    return Error(std::string("unexpected character '") + c + "'");
  }

  Status ParseBraces(uint32_t* min, std::optional<uint32_t>* max) {
    ++pos_;  // '{'
    SkipSpace();
    std::optional<uint32_t> first, second;
    SPARROW_RETURN_IF_ERROR(ParseCount(&first));
    SkipSpace();
    bool comma = false;
    if (pos_ < text_.size() && text_[pos_] == ',') {
      comma = true;
      ++pos_;
      SkipSpace();
      SPARROW_RETURN_IF_ERROR(ParseCount(&second));
      SkipSpace();
    }
    if (pos_ == text_.size() || text_[pos_] != '}') return Error("expected '}' after a count");
    if (!first && !comma) return Error("'{}' needs a count");
    ++pos_;
    *min = first.value_or(0);
    *max = comma ? second : first;
    if (*max && **max < *min) return Error("repetition maximum is below its minimum");
    return Status::Ok();
  }

  Status ParseCount(std::optional<uint32_t>* out) {
    uint64_t v = 0;
    size_t digits = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(text_[pos_] - '0');
      ++pos_;
      if (++digits > 9 || v > limits_.max_repetition) {
        return Error("repetition count above the limit of " +
                     std::to_string(limits_.max_repetition));
      }
    }
    if (digits > 0) *out = static_cast<uint32_t>(v);
    return Status::Ok();
  }

  // x{min,max}: min copies, then a chain of optional copies or a star rule. Tail positions keep
  // the matcher's stacks flat however long the repetition runs.
  Result<Sequence> Repeat(Sequence elem, uint32_t min, std::optional<uint32_t> max) {
    if (elem.size() != 1) {
      SPARROW_ASSIGN_OR_RETURN(uint32_t id, NewRule({std::move(elem)}, "repeated"));
      elem = {Symbol::Rule(id)};
    }
    const Symbol x = elem[0];
    Sequence out(min, x);
    SPARROW_RETURN_IF_ERROR(CountSymbols(min));
    if (!max) {
      const uint32_t star = static_cast<uint32_t>(rules_.size());
      SPARROW_ASSIGN_OR_RETURN(uint32_t id, NewRule({{x, Symbol::Rule(star)}, {}}, "star"));
      SPARROW_RETURN_IF_ERROR(CountSymbols(4));
      out.push_back(Symbol::Rule(id));
      return out;
    }
    std::optional<uint32_t> tail;
    for (uint32_t k = min; k < *max; ++k) {
      Sequence more = {x};
      if (tail) more.push_back(Symbol::Rule(*tail));
      SPARROW_RETURN_IF_ERROR(CountSymbols(more.size() + 2));
      SPARROW_ASSIGN_OR_RETURN(uint32_t id, NewRule({std::move(more), {}}, "optional"));
      tail = id;
    }
    if (tail) out.push_back(Symbol::Rule(*tail));
    return out;
  }

  // One character of a literal or class, escapes decoded; pos_ is at its first byte.
  Result<uint32_t> ReadChar() {
    const uint8_t b = static_cast<uint8_t>(text_[pos_]);
    if (b == '\\') {
      if (pos_ + 1 >= text_.size()) return Error("the text ends inside an escape");
      const char e = text_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n':
          return uint32_t{'\n'};
        case 'r':
          return uint32_t{'\r'};
        case 't':
          return uint32_t{'\t'};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
          return static_cast<uint32_t>(e);
        case 'x':
          return ReadHex(2);
        case 'u':
          return ReadHex(4);
        case 'U':
          return ReadHex(8);
        default:
          pos_ -= 2;
          return Error(std::string("unknown escape '\\") + e + "'");
      }
    }
    if (b < 0x80) {
      ++pos_;
      return uint32_t{b};
    }
    int n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (b > 0xF4) n = 0;
    if (n == 0 || pos_ + n > text_.size()) return Error("invalid UTF-8 in the grammar");
    uint32_t cp = b & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
      const uint8_t cb = static_cast<uint8_t>(text_[pos_ + i]);
      if ((cb & 0xC0) != 0x80) return Error("invalid UTF-8 in the grammar");
      cp = (cp << 6) | (cb & 0x3F);
    }
    const uint32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_length[n] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error("invalid UTF-8 in the grammar");
    }
    pos_ += n;
    return cp;
  }

  Result<uint32_t> ReadHex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= text_.size() || HexValue(text_[pos_]) < 0) {
        return Error("expected " + std::to_string(digits) + " hex digits");
      }
      v = v * 16 + static_cast<uint32_t>(HexValue(text_[pos_++]));
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return Error("escape names no character");
    }
    return v;
  }

  Status ParseLiteral(Sequence* out) {
    const size_t open = pos_++;
    while (true) {
      if (pos_ >= text_.size()) {
        pos_ = open;
        return Error("unterminated string literal");
      }
      if (text_[pos_] == '"') break;
      SPARROW_ASSIGN_OR_RETURN(uint32_t cp, ReadChar());
      for (uint8_t byte : EncodeUtf8(cp)) out->push_back(Symbol::Bytes(byte, byte));
    }
    ++pos_;
    return Status::Ok();
  }

  Status ParseClass(Sequence* out) {
    const size_t open = pos_++;
    bool negate = false;
    if (pos_ < text_.size() && text_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    while (true) {
      if (pos_ >= text_.size()) {
        pos_ = open;
        return Error("unterminated character class");
      }
      if (text_[pos_] == ']') break;
      SPARROW_ASSIGN_OR_RETURN(uint32_t lo, ReadChar());
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        const size_t at = pos_;
        SPARROW_ASSIGN_OR_RETURN(hi, ReadChar());
        if (hi < lo) {
          pos_ = at;
          return Error("character range ends before it starts");
        }
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return LowerClass(NormalizeRanges(std::move(ranges), negate), out);
  }

  // A class becomes one byte range when it can, else a rule of UTF-8 byte patterns (shared by
  // every identical class).
  Status LowerClass(const std::vector<CodeRange>& ranges, Sequence* out) {
    std::vector<ByteRangeSeq> seqs;
    for (const CodeRange& r : ranges) AppendUtf8Sequences(r.lo, r.hi, &seqs);
    if (seqs.empty()) return Error("the character class matches no character");
    if (seqs.size() == 1 && seqs[0].size() == 1) {
      *out = {Symbol::Bytes(seqs[0][0].first, seqs[0][0].second)};
      return Status::Ok();
    }
    std::string key;
    for (const CodeRange& r : ranges)
      key += std::to_string(r.lo) + "-" + std::to_string(r.hi) + ",";
    auto it = class_rules_.find(key);
    if (it == class_rules_.end()) {
      std::vector<Sequence> alts;
      size_t n = 0;
      for (const ByteRangeSeq& s : seqs) {
        Sequence alt;
        for (auto [lo, hi] : s) alt.push_back(Symbol::Bytes(lo, hi));
        n += alt.size() + 1;
        alts.push_back(std::move(alt));
      }
      SPARROW_RETURN_IF_ERROR(CountSymbols(n));
      SPARROW_ASSIGN_OR_RETURN(uint32_t id, NewRule(std::move(alts), "class"));
      it = class_rules_.emplace(std::move(key), id).first;
    }
    *out = {Symbol::Rule(it->second)};
    return Status::Ok();
  }

  std::string_view text_;
  const GrammarLimits& limits_;
  size_t pos_ = 0;
  size_t symbols_ = 0;
  std::vector<std::vector<Sequence>> rules_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<std::string, uint32_t> class_rules_;
};

}  // namespace

Result<Grammar> ParseGbnf(std::string_view text, const GrammarLimits& limits) {
  return Parser(text, limits).Run();
}

}  // namespace sparrow::grammar
