#include "engine/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "engine/tokenizer/unicode.h"

namespace sparrow::jinja {

std::string Located(int line, int column, std::string_view what) {
  return "chat template line " + std::to_string(line) + ":" + std::to_string(column) + ": " +
         std::string(what);
}

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsNameChar(char c) {
  return IsNameStart(c) || IsDigit(c);
}
int HexDigit(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// jinja2 normalises every line ending to "\n" and, without keep_trailing_newline, drops one
// trailing newline of the template.
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options)
      : src_(NormalizeNewlines(source)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      size_t start = FindTagStart(pos_);
      std::string text = src_.substr(pos_, start - pos_);
      if (start == src_.size()) {
        Emit(Token::Type::kText, std::move(text), pos_);
        break;
      }
      char kind = src_[start + 1];
      char control = start + 2 < src_.size() ? src_[start + 2] : '\0';
      Emit(Token::Type::kText, StripBeforeTag(std::move(text), control, kind != '{'), pos_);
      pos_ = start + 2 + ((control == '-' || control == '+') ? 1 : 0);
      if (kind == '#') {
        SPARROW_RETURN_IF_ERROR(SkipComment(start));
      } else if (kind == '%' && MatchRawBegin()) {
        SPARROW_RETURN_IF_ERROR(LexRaw(start));
      } else {
        SPARROW_RETURN_IF_ERROR(LexTag(kind, start));
      }
    }
    tokens_.push_back({Token::Type::kEnd, "", Line(src_.size()), Column(src_.size())});
    return std::move(tokens_);
  }

 private:
  // Whitespace control on the text before a tag opened with `control` ('-', '+' or other):
  // '-' strips all trailing whitespace; lstrip_blocks strips the spaces and tabs that start the
  // line of a block or comment tag.
  std::string StripBeforeTag(std::string text, char control, bool block_or_comment) const {
    if (control == '-') {
      while (!text.empty() && IsSpace(text.back())) text.pop_back();
    } else if (control != '+' && options_.lstrip_blocks && block_or_comment) {
      size_t line_pos = text.rfind('\n');
      line_pos = line_pos == std::string::npos ? 0 : line_pos + 1;
      if ((line_pos > 0 || line_starting_) &&
          text.find_first_not_of(" \t", line_pos) == std::string::npos) {
        text.resize(line_pos);
      }
    }
    return text;
  }

  // At `at`: optional whitespace, `word`, optional whitespace, then a block end ("-%}", "+%}"
  // when `plus_end`, or "%}"). Returns the offset after the end and its control character.
  bool MatchWordTag(size_t at, std::string_view word, bool plus_end, size_t* after,
                    char* control) const {
    while (at < src_.size() && IsSpace(src_[at])) ++at;
    if (src_.compare(at, word.size(), word) != 0) return false;
    at += word.size();
    while (at < src_.size() && IsSpace(src_[at])) ++at;
    for (char c : {'-', '+', '\0'}) {
      if (c == '+' && !plus_end) continue;
      size_t end = at + (c ? 1 : 0);
      if ((c == '\0' || (at < src_.size() && src_[at] == c)) && src_.compare(end, 2, "%}") == 0) {
        *after = end + 2;
        *control = c;
        return true;
      }
    }
    return false;
  }

  bool MatchRawBegin() const {
    size_t after = 0;
    char control = 0;
    return MatchWordTag(pos_, "raw", false, &after, &control);
  }

  // {% raw %}...{% endraw %}: the text between is kept as it is.
  Status LexRaw(size_t start) {
    size_t after = 0;
    char control = 0;
    MatchWordTag(pos_, "raw", false, &after, &control);
    pos_ = after;
    if (control == '-') {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 1)) {
      char end_control = at + 2 < src_.size() ? src_[at + 2] : '\0';
      size_t word_at = at + 2 + ((end_control == '-' || end_control == '+') ? 1 : 0);
      char close = 0;
      if (!MatchWordTag(word_at, "endraw", true, &after, &close)) continue;
      Emit(Token::Type::kText, StripBeforeTag(src_.substr(pos_, at - pos_), end_control, true),
           pos_);
      pos_ = after;
      AfterTagEnd(close, true);
      return Status::Ok();
    }
    return Error(start, "the raw block is not closed with '{% endraw %}'");
  }

  int Line(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    return static_cast<int>(it - line_starts_.begin());
  }
  int Column(size_t offset) const {
    return static_cast<int>(offset - line_starts_[static_cast<size_t>(Line(offset) - 1)]) + 1;
  }
  Status Error(size_t offset, std::string_view what) const {
    return InvalidArgument(Located(Line(offset), Column(offset), what));
  }
  void Emit(Token::Type type, std::string value, size_t offset) {
    if (type == Token::Type::kText && value.empty()) return;
    tokens_.push_back({type, std::move(value), Line(offset), Column(offset)});
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return src_.size();
  }

  // After a tag end: `-` eats all following whitespace; trim_blocks eats one newline.
  void AfterTagEnd(char control, bool trimmable) {
    if (control == '-') {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
    } else if (control != '+' && trimmable && options_.trim_blocks && pos_ < src_.size() &&
               src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  Status SkipComment(size_t start) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) return Error(start, "the comment is not closed with '#}'");
    char control = end > pos_ ? src_[end - 1] : '\0';
    pos_ = end + 2;
    AfterTagEnd(control, true);
    return Status::Ok();
  }

  Status LexTag(char kind, size_t start) {
    bool block = kind == '%';
    Emit(block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", start);
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        return Error(start, block ? "the tag is not closed with '%}'"
                                  : "the expression is not closed with '}}'");
      }
      if (depth == 0) {
        const char* end = block ? "%}" : "}}";
        for (char control : {'-', '+', '\0'}) {
          if (control == '+' && !block) continue;
          size_t at = pos_ + (control ? 1 : 0);
          if ((control == '\0' || src_[pos_] == control) && src_.compare(at, 2, end) == 0) {
            Emit(block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", pos_);
            pos_ = at + 2;
            AfterTagEnd(control, block);
            return Status::Ok();
          }
        }
      }
      char c = src_[pos_];
      if (IsDigit(c)) {
        LexNumber();
      } else if (IsNameStart(c)) {
        size_t b = pos_;
        while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
        Emit(Token::Type::kName, src_.substr(b, pos_ - b), b);
      } else if (c == '\'' || c == '"') {
        SPARROW_RETURN_IF_ERROR(LexString());
      } else {
        static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* t : kTwo) {
          if (src_.compare(pos_, 2, t) == 0) op = t;
        }
        if (op.empty() && std::strchr("+-*/%~<>=()[]{},.:|;", c) != nullptr) op = std::string(1, c);
        if (op.empty()) return Error(pos_, std::string("unexpected character '") + c + "'");
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") --depth;
        if (depth < 0) return Error(pos_, "unexpected '" + op + "'");
        Emit(Token::Type::kOp, op, pos_);
        pos_ += op.size();
      }
    }
  }

  void LexNumber() {
    size_t b = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() && (IsDigit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && IsDigit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t e = pos_ + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && IsDigit(src_[e])) {
        is_float = true;
        pos_ = e;
        digits();
      }
    }
    std::string text;
    for (size_t i = b; i < pos_; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    Emit(is_float ? Token::Type::kFloat : Token::Type::kInt, std::move(text), b);
  }

  // Python's "unicode-escape" decoding, which jinja2 applies to string literals.
  Status LexString() {
    size_t b = pos_;
    char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) return Error(b, "the string is not closed");
      char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= src_.size()) return Error(b, "the string is not closed");
      char e = src_[pos_++];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int i = 0; i < n; ++i) {
            int h = pos_ < src_.size() ? HexDigit(src_[pos_]) : -1;
            if (h < 0) return Error(pos_, std::string("truncated \\") + e + " escape in a string");
            cp = cp * 16 + static_cast<uint32_t>(h);
            ++pos_;
          }
          if (cp > 0x10FFFF) return Error(b, "the string has an escape beyond U+10FFFF");
          tokenizer::AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7';
                 ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            }
            tokenizer::AppendUtf8(cp, &out);
          } else if (e == 'N') {
            return Error(pos_ - 2, "\\N{...} escapes are not supported");
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    Emit(Token::Type::kString, std::move(out), b);
    return Status::Ok();
  }

  std::string src_;
  LexOptions options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

Result<std::vector<Token>> Lex(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).Run();
}

}  // namespace sparrow::jinja
