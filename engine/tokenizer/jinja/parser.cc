#include "engine/tokenizer/jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "engine/tokenizer/jinja/builtins.h"

namespace sparrow::jinja {
namespace {

using TT = Token::Type;

std::string Describe(const Token& t) {
  switch (t.type) {
    case TT::kText:
      return "text";
    case TT::kVarBegin:
      return "'{{'";
    case TT::kVarEnd:
      return "'}}'";
    case TT::kBlockBegin:
      return "'{%'";
    case TT::kBlockEnd:
      return "'%}'";
    case TT::kString:
      return "a string";
    case TT::kEnd:
      return "the end of the template";
    default:
      return "'" + t.value + "'";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Body> ParseTemplate() {
    Body body;
    std::string end;
    SPARROW_RETURN_IF_ERROR(ParseBody(&body, {}, &end));
    return body;
  }

 private:
  const Token& Cur() const { return t_[pos_]; }
  const Token& Ahead(size_t k) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  void Advance() {
    if (pos_ + 1 < t_.size()) ++pos_;
  }
  bool IsOp(std::string_view op) const { return Cur().type == TT::kOp && Cur().value == op; }
  bool IsName(std::string_view n) const { return Cur().type == TT::kName && Cur().value == n; }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Advance();
    return true;
  }
  bool SkipName(std::string_view n) {
    if (!IsName(n)) return false;
    Advance();
    return true;
  }
  Status Fail(const Token& at, std::string_view what) const {
    return InvalidArgument(Located(at.line, at.column, what));
  }
  Status Unexpected(std::string_view expected) const {
    return Fail(Cur(), "expected " + std::string(expected) + ", got " + Describe(Cur()));
  }
  Status ExpectOp(std::string_view op) {
    if (!SkipOp(op)) return Unexpected("'" + std::string(op) + "'");
    return Status::Ok();
  }
  Status ExpectType(TT type, std::string_view what) {
    if (Cur().type != type) return Unexpected(what);
    Advance();
    return Status::Ok();
  }
  Result<std::string> ExpectName() {
    if (Cur().type != TT::kName) return Unexpected("a name");
    std::string n = Cur().value;
    Advance();
    return n;
  }
  ExprPtr NewExpr(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr NewStmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // A depth guard: every recursive production enters one.
  struct Nest {
    explicit Nest(int* d) : depth(d) { ++*depth; }
    ~Nest() { --*depth; }
    int* depth;
  };
  Status CheckDepth() const {
    if (depth_ > kMaxNesting) return Fail(Cur(), "the template nests too deeply");
    return Status::Ok();
  }

  // ---- statements ----

  // Parses until a block tag named in `ends` (consumed with its name, which goes to *end).
  Status ParseBody(Body* out, std::initializer_list<std::string_view> ends, std::string* end) {
    Nest nest(&depth_);
    SPARROW_RETURN_IF_ERROR(CheckDepth());
    while (true) {
      const Token& tok = Cur();
      switch (tok.type) {
        case TT::kText: {
          auto s = NewStmt(Stmt::Kind::kText, tok);
          s->text = tok.value;
          out->push_back(std::move(s));
          Advance();
          break;
        }
        case TT::kVarBegin: {
          auto s = NewStmt(Stmt::Kind::kPrint, tok);
          Advance();
          SPARROW_ASSIGN_OR_RETURN(s->expr, ParseTuple(true, false));
          SPARROW_RETURN_IF_ERROR(ExpectType(TT::kVarEnd, "'}}'"));
          out->push_back(std::move(s));
          break;
        }
        case TT::kBlockBegin: {
          const Token& name = Ahead(1);
          if (name.type == TT::kName) {
            for (std::string_view e : ends) {
              if (name.value == e) {
                *end = name.value;
                Advance();
                Advance();
                return Status::Ok();
              }
            }
          }
          Advance();
          SPARROW_RETURN_IF_ERROR(ParseStatement(out));
          break;
        }
        case TT::kEnd: {
          if (ends.size() == 0) return Status::Ok();
          std::string want;
          for (std::string_view e : ends)
            want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          return Fail(tok, "unexpected end of template, expected " + want);
        }
        default:
          return Unexpected("text, '{{' or '{%'");
      }
    }
  }

  Status EndTag() { return ExpectType(TT::kBlockEnd, "'%}'"); }

  Status ParseStatement(Body* out) {
    const Token tok = Cur();
    if (tok.type != TT::kName) return Unexpected("a tag name");
    const std::string& w = tok.value;
    Advance();
    if (w == "if") return ParseIf(tok, out);
    if (w == "for") return ParseFor(tok, out);
    if (w == "set") return ParseSet(tok, out);
    if (w == "macro") return ParseMacro(tok, out);
    if (w == "call") return ParseCallBlock(tok, out);
    if (w == "filter") return ParseFilterBlock(tok, out);
    if (w == "generation") {
      auto s = NewStmt(Stmt::Kind::kScope, tok);
      SPARROW_RETURN_IF_ERROR(EndTag());
      std::string end;
      SPARROW_RETURN_IF_ERROR(ParseBody(&s->body, {"endgeneration"}, &end));
      SPARROW_RETURN_IF_ERROR(EndTag());
      out->push_back(std::move(s));
      return Status::Ok();
    }
    if (w == "break" || w == "continue") {
      if (loop_depth_ == 0) return Fail(tok, "'" + w + "' outside a for loop");
      out->push_back(NewStmt(w == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, tok));
      return EndTag();
    }
    static constexpr std::string_view kEnds[] = {"endif",         "endfor",  "endset",
                                                 "endmacro",      "endcall", "endfilter",
                                                 "endgeneration", "elif",    "else"};
    for (std::string_view e : kEnds) {
      if (w == e) return Fail(tok, "unexpected '" + w + "' without a matching opening tag");
    }
    return UnsupportedAt(tok, "tag '" + w + "' is not supported");
  }

  Status UnsupportedAt(const Token& at, std::string_view what) const {
    return Unsupported(Located(at.line, at.column, what));
  }

  Status ParseIf(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kIf, tok);
    std::string end = "elif";
    while (end == "elif") {
      SPARROW_ASSIGN_OR_RETURN(auto cond, ParseTuple(false, false));
      SPARROW_RETURN_IF_ERROR(EndTag());
      s->conditions.push_back(std::move(cond));
      s->bodies.emplace_back();
      SPARROW_RETURN_IF_ERROR(ParseBody(&s->bodies.back(), {"elif", "else", "endif"}, &end));
    }
    if (end == "else") {
      SPARROW_RETURN_IF_ERROR(EndTag());
      SPARROW_RETURN_IF_ERROR(ParseBody(&s->else_body, {"endif"}, &end));
    }
    out->push_back(std::move(s));
    return EndTag();
  }

  Result<ExprPtr> ParseAssignTarget(bool allow_namespace) {
    const Token start = Cur();
    std::vector<ExprPtr> names;
    do {
      const Token at = Cur();
      SPARROW_ASSIGN_OR_RETURN(std::string n, ExpectName());
      auto e = NewExpr(Expr::Kind::kName, at);
      e->name = n;
      if (allow_namespace && IsOp(".")) {
        Advance();
        auto attr = NewExpr(Expr::Kind::kGetAttr, at);
        SPARROW_ASSIGN_OR_RETURN(attr->name, ExpectName());
        attr->args.push_back(std::move(e));
        return attr;
      }
      names.push_back(std::move(e));
    } while (SkipOp(","));
    if (names.size() == 1) return std::move(names[0]);
    auto t = NewExpr(Expr::Kind::kTuple, start);
    t->args = std::move(names);
    return t;
  }

  Status ParseFor(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kFor, tok);
    SPARROW_ASSIGN_OR_RETURN(s->target, ParseAssignTarget(false));
    if (!SkipName("in")) return Unexpected("'in'");
    SPARROW_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, false));
    if (SkipName("if")) {
      SPARROW_ASSIGN_OR_RETURN(s->condition, ParseExpression(true));
    }
    if (IsName("recursive")) return UnsupportedAt(Cur(), "recursive for loops are not supported");
    SPARROW_RETURN_IF_ERROR(EndTag());
    std::string end;
    ++loop_depth_;
    Status st = ParseBody(&s->body, {"else", "endfor"}, &end);
    --loop_depth_;
    SPARROW_RETURN_IF_ERROR(st);
    if (end == "else") {
      SPARROW_RETURN_IF_ERROR(EndTag());
      SPARROW_RETURN_IF_ERROR(ParseBody(&s->else_body, {"endfor"}, &end));
    }
    out->push_back(std::move(s));
    return EndTag();
  }

  Status ParseSet(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kSet, tok);
    SPARROW_ASSIGN_OR_RETURN(s->target, ParseAssignTarget(true));
    if (SkipOp("=")) {
      SPARROW_ASSIGN_OR_RETURN(s->expr, ParseTuple(true, false));
      out->push_back(std::move(s));
      return EndTag();
    }
    if (s->target->kind != Expr::Kind::kName) return Unexpected("'='");
    if (IsOp("|")) return UnsupportedAt(Cur(), "filters on a block set are not supported");
    SPARROW_RETURN_IF_ERROR(EndTag());
    std::string end;
    SPARROW_RETURN_IF_ERROR(
        WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endset"}, &end); }));
    out->push_back(std::move(s));
    return EndTag();
  }

  template <typename F>
  Status WithLoopDepth(int depth, F f) {
    int saved = loop_depth_;
    loop_depth_ = depth;
    Status st = f();
    loop_depth_ = saved;
    return st;
  }

  Status ParseParams(std::vector<MacroParam>* params) {
    SPARROW_RETURN_IF_ERROR(ExpectOp("("));
    while (!SkipOp(")")) {
      if (!params->empty()) SPARROW_RETURN_IF_ERROR(ExpectOp(","));
      if (SkipOp(")")) break;
      MacroParam p;
      SPARROW_ASSIGN_OR_RETURN(p.name, ExpectName());
      if (SkipOp("=")) {
        SPARROW_ASSIGN_OR_RETURN(p.default_value, ParseExpression(true));
      } else if (!params->empty() && params->back().default_value) {
        return Fail(Cur(), "a parameter without a default follows one with a default");
      }
      params->push_back(std::move(p));
    }
    return Status::Ok();
  }

  Status ParseMacro(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kMacro, tok);
    SPARROW_ASSIGN_OR_RETURN(s->text, ExpectName());
    SPARROW_RETURN_IF_ERROR(ParseParams(&s->params));
    SPARROW_RETURN_IF_ERROR(EndTag());
    std::string end;
    SPARROW_RETURN_IF_ERROR(
        WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endmacro"}, &end); }));
    out->push_back(std::move(s));
    return EndTag();
  }

  Status ParseCallBlock(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kCallBlock, tok);
    if (IsOp("(")) SPARROW_RETURN_IF_ERROR(ParseParams(&s->params));
    SPARROW_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
    if (s->expr->kind != Expr::Kind::kCall) return Fail(tok, "expected a call after 'call'");
    SPARROW_RETURN_IF_ERROR(EndTag());
    std::string end;
    SPARROW_RETURN_IF_ERROR(
        WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endcall"}, &end); }));
    out->push_back(std::move(s));
    return EndTag();
  }

  Status ParseFilterBlock(const Token& tok, Body* out) {
    auto s = NewStmt(Stmt::Kind::kFilterBlock, tok);
    ExprPtr chain;
    do {
      SPARROW_ASSIGN_OR_RETURN(chain, ParseFilter(std::move(chain)));
    } while (SkipOp("|"));
    s->expr = std::move(chain);
    SPARROW_RETURN_IF_ERROR(EndTag());
    std::string end;
    SPARROW_RETURN_IF_ERROR(ParseBody(&s->body, {"endfilter"}, &end));
    out->push_back(std::move(s));
    return EndTag();
  }

  // ---- expressions ----

  bool AtTupleEnd() const {
    TT t = Cur().type;
    return t == TT::kVarEnd || t == TT::kBlockEnd || IsOp(")") || IsName("in") || IsName("if") ||
           t == TT::kEnd;
  }

  Result<ExprPtr> ParseTuple(bool with_cond, bool explicit_parens) {
    const Token start = Cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) SPARROW_RETURN_IF_ERROR(ExpectOp(","));
      if (!items.empty() && AtTupleEnd()) break;
      if (items.empty() && explicit_parens && IsOp(")")) break;
      SPARROW_ASSIGN_OR_RETURN(auto e, ParseExpression(with_cond));
      items.push_back(std::move(e));
      if (IsOp(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple && items.size() == 1) return std::move(items[0]);
    if (items.empty() && !explicit_parens) return Unexpected("an expression");
    auto t = NewExpr(Expr::Kind::kTuple, start);
    t->args = std::move(items);
    return t;
  }

  Result<ExprPtr> ParseExpression(bool with_cond) {
    Nest nest(&depth_);
    SPARROW_RETURN_IF_ERROR(CheckDepth());
    SPARROW_ASSIGN_OR_RETURN(auto e, ParseOr());
    if (!with_cond) return e;
    while (IsName("if")) {
      const Token at = Cur();
      Advance();
      auto c = NewExpr(Expr::Kind::kCond, at);
      SPARROW_ASSIGN_OR_RETURN(auto cond, ParseOr());
      ExprPtr other;
      if (SkipName("else")) {
        SPARROW_ASSIGN_OR_RETURN(other, ParseExpression(true));
      }
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr Binary(const Token& at, std::string op, ExprPtr l, ExprPtr r) {
    auto b = NewExpr(Expr::Kind::kBinary, at);
    b->op = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  // `or` binds looser than `and`; both are left-associative.
  Result<ExprPtr> ParseOr() { return ParseLogic(true); }
  Result<ExprPtr> ParseLogic(bool is_or) {
    const char* word = is_or ? "or" : "and";
    auto operand = [&] { return is_or ? ParseLogic(false) : ParseNot(); };
    SPARROW_ASSIGN_OR_RETURN(auto l, operand());
    while (IsName(word)) {
      const Token at = Cur();
      Advance();
      SPARROW_ASSIGN_OR_RETURN(auto r, operand());
      l = Binary(at, word, std::move(l), std::move(r));
    }
    return l;
  }

  Result<ExprPtr> ParseNot() {
    if (IsName("not")) {
      Nest nest(&depth_);
      SPARROW_RETURN_IF_ERROR(CheckDepth());
      auto u = NewExpr(Expr::Kind::kUnary, Cur());
      Advance();
      u->op = "not";
      SPARROW_ASSIGN_OR_RETURN(auto operand, ParseNot());
      u->args.push_back(std::move(operand));
      return u;
    }
    return ParseCompare();
  }

  Result<ExprPtr> ParseCompare() {
    SPARROW_ASSIGN_OR_RETURN(auto l, ParseArith());
    ExprPtr result;
    while (true) {
      const Token at = Cur();
      std::string op;
      if (at.type == TT::kOp && (at.value == "==" || at.value == "!=" || at.value == "<" ||
                                 at.value == "<=" || at.value == ">" || at.value == ">=")) {
        op = at.value;
        Advance();
      } else if (IsName("in")) {
        op = "in";
        Advance();
      } else if (IsName("not") && Ahead(1).type == TT::kName && Ahead(1).value == "in") {
        op = "not in";
        Advance();
        Advance();
      } else {
        break;
      }
      SPARROW_ASSIGN_OR_RETURN(auto r, ParseArith());
      if (result) {
        // A chain a < b < c is (a < b) and (b < c); jinja2 evaluates b once, we twice, which
        // only differs for side effects templates cannot have.
        return UnsupportedAt(at, "chained comparisons are not supported");
      }
      result = Binary(at, op, std::move(l), std::move(r));
    }
    if (result) return result;
    return l;
  }

  // The arithmetic operators, loosest first, each level left-associative over the next.
  Result<ExprPtr> ParseArith(size_t level = 0) {
    static const std::vector<std::vector<std::string_view>> kLevels = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == kLevels.size()) return ParseUnary(true);
    auto at_op = [&] {
      if (Cur().type != TT::kOp) return false;
      for (std::string_view op : kLevels[level]) {
        if (Cur().value == op) return true;
      }
      return false;
    };
    SPARROW_ASSIGN_OR_RETURN(auto l, ParseArith(level + 1));
    while (at_op()) {
      const Token at = Cur();
      Advance();
      SPARROW_ASSIGN_OR_RETURN(auto r, ParseArith(level + 1));
      l = Binary(at, at.value, std::move(l), std::move(r));
    }
    return l;
  }

  Result<ExprPtr> ParseUnary(bool with_filter) {
    Nest nest(&depth_);
    SPARROW_RETURN_IF_ERROR(CheckDepth());
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      e = NewExpr(Expr::Kind::kUnary, Cur());
      e->op = Cur().value;
      Advance();
      SPARROW_ASSIGN_OR_RETURN(auto operand, ParseUnary(false));
      e->args.push_back(std::move(operand));
    } else {
      SPARROW_ASSIGN_OR_RETURN(e, ParsePrimary());
    }
    SPARROW_ASSIGN_OR_RETURN(e, ParsePostfix(std::move(e)));
    if (!with_filter) return e;
    while (true) {
      if (SkipOp("|")) {
        SPARROW_ASSIGN_OR_RETURN(e, ParseFilter(std::move(e)));
      } else if (IsName("is")) {
        SPARROW_ASSIGN_OR_RETURN(e, ParseTest(std::move(e)));
      } else if (IsOp("(")) {
        SPARROW_ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
      } else {
        return e;
      }
    }
  }

  Result<ExprPtr> ParsePrimary() {
    const Token tok = Cur();
    switch (tok.type) {
      case TT::kName: {
        Advance();
        auto e = NewExpr(Expr::Kind::kLiteral, tok);
        const std::string& n = tok.value;
        if (n == "true" || n == "True") {
          e->value = Value::Bool(true);
        } else if (n == "false" || n == "False") {
          e->value = Value::Bool(false);
        } else if (n == "none" || n == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = n;
        }
        return e;
      }
      case TT::kString: {
        std::string s;
        while (Cur().type == TT::kString) {
          s += Cur().value;
          Advance();
        }
        auto e = NewExpr(Expr::Kind::kLiteral, tok);
        e->value = Value::String(std::move(s));
        return e;
      }
      case TT::kInt: {
        Advance();
        int64_t v = 0;
        auto r = std::from_chars(tok.value.data(), tok.value.data() + tok.value.size(), v);
        if (r.ec != std::errc()) return UnsupportedAt(tok, "integer literal out of range");
        auto e = NewExpr(Expr::Kind::kLiteral, tok);
        e->value = Value::Int(v);
        return e;
      }
      case TT::kFloat: {
        Advance();
        auto e = NewExpr(Expr::Kind::kLiteral, tok);
        e->value = Value::Float(std::strtod(tok.value.c_str(), nullptr));
        return e;
      }
      case TT::kOp:
        if (tok.value == "(") {
          Advance();
          SPARROW_ASSIGN_OR_RETURN(auto e, ParseTuple(true, true));
          SPARROW_RETURN_IF_ERROR(ExpectOp(")"));
          return e;
        }
        if (tok.value == "[" || tok.value == "{") return ParseCollection(tok);
        break;
      default:
        break;
    }
    return Unexpected("an expression");
  }

  Result<ExprPtr> ParseCollection(const Token& tok) {
    bool is_dict = tok.value == "{";
    std::string close = is_dict ? "}" : "]";
    auto e = NewExpr(is_dict ? Expr::Kind::kDict : Expr::Kind::kList, tok);
    Advance();
    while (!SkipOp(close)) {
      if (!e->args.empty()) SPARROW_RETURN_IF_ERROR(ExpectOp(","));
      if (SkipOp(close)) break;
      SPARROW_ASSIGN_OR_RETURN(auto item, ParseExpression(true));
      e->args.push_back(std::move(item));
      if (is_dict) {
        SPARROW_RETURN_IF_ERROR(ExpectOp(":"));
        SPARROW_ASSIGN_OR_RETURN(auto v, ParseExpression(true));
        e->args.push_back(std::move(v));
      }
    }
    return e;
  }

  Result<ExprPtr> ParsePostfix(ExprPtr e) {
    while (true) {
      const Token at = Cur();
      if (SkipOp(".")) {
        if (Cur().type == TT::kInt) {
          auto item = NewExpr(Expr::Kind::kGetItem, at);
          auto idx = NewExpr(Expr::Kind::kLiteral, Cur());
          idx->value = Value::Int(std::strtoll(Cur().value.c_str(), nullptr, 10));
          Advance();
          item->args.push_back(std::move(e));
          item->args.push_back(std::move(idx));
          e = std::move(item);
          continue;
        }
        auto attr = NewExpr(Expr::Kind::kGetAttr, at);
        SPARROW_ASSIGN_OR_RETURN(attr->name, ExpectName());
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (SkipOp("[")) {
        SPARROW_ASSIGN_OR_RETURN(e, ParseSubscript(at, std::move(e)));
      } else if (IsOp("(")) {
        SPARROW_ASSIGN_OR_RETURN(e, ParseCall(std::move(e)));
      } else {
        return e;
      }
    }
  }

  Result<ExprPtr> ParseSubscript(const Token& at, ExprPtr subject) {
    ExprPtr parts[3];
    bool is_slice = false;
    for (int i = 0; i < 3; ++i) {
      if (i > 0) {
        if (!SkipOp(":")) break;
        is_slice = true;
      }
      if (!IsOp(":") && !IsOp("]")) {
        SPARROW_ASSIGN_OR_RETURN(parts[i], ParseExpression(true));
      }
      if (i == 0 && !IsOp(":")) break;
    }
    if (IsOp(",")) return UnsupportedAt(Cur(), "tuple subscripts are not supported");
    SPARROW_RETURN_IF_ERROR(ExpectOp("]"));
    auto e = NewExpr(is_slice ? Expr::Kind::kSlice : Expr::Kind::kGetItem, at);
    e->args.push_back(std::move(subject));
    if (!is_slice && !parts[0]) return Fail(at, "expected an expression inside '[]'");
    for (int i = 0; i < (is_slice ? 3 : 1); ++i) e->args.push_back(std::move(parts[i]));
    return e;
  }

  Status ParseArgs(Expr* e) {
    SPARROW_RETURN_IF_ERROR(ExpectOp("("));
    bool first = true;
    while (!SkipOp(")")) {
      if (!first) SPARROW_RETURN_IF_ERROR(ExpectOp(","));
      first = false;
      if (SkipOp(")")) break;
      if (IsOp("*") || IsOp("**"))
        return UnsupportedAt(Cur(), "*args and **kwargs are not supported");
      if (Cur().type == TT::kName && Ahead(1).type == TT::kOp && Ahead(1).value == "=") {
        std::string key = Cur().value;
        Advance();
        Advance();
        SPARROW_ASSIGN_OR_RETURN(auto v, ParseExpression(true));
        e->kwargs.emplace_back(std::move(key), std::move(v));
        continue;
      }
      if (!e->kwargs.empty()) return Fail(Cur(), "a positional argument follows keyword arguments");
      SPARROW_ASSIGN_OR_RETURN(auto v, ParseExpression(true));
      e->args.push_back(std::move(v));
    }
    return Status::Ok();
  }

  Result<ExprPtr> ParseCall(ExprPtr callee) {
    auto e = NewExpr(Expr::Kind::kCall, Cur());
    e->line = callee->line;  // errors of a call point at what is called
    e->column = callee->column;
    e->args.push_back(std::move(callee));
    SPARROW_RETURN_IF_ERROR(ParseArgs(e.get()));
    return e;
  }

  Result<std::string> DottedName() {
    SPARROW_ASSIGN_OR_RETURN(std::string n, ExpectName());
    while (SkipOp(".")) {
      SPARROW_ASSIGN_OR_RETURN(std::string part, ExpectName());
      n += "." + part;
    }
    return n;
  }

  // `subject` is null for the filters of a filter block.
  Result<ExprPtr> ParseFilter(ExprPtr subject) {
    auto e = NewExpr(Expr::Kind::kFilter, Cur());
    SPARROW_ASSIGN_OR_RETURN(e->name, DottedName());
    e->unknown = !IsFilter(e->name);
    e->args.push_back(std::move(subject));
    if (IsOp("(")) SPARROW_RETURN_IF_ERROR(ParseArgs(e.get()));
    return e;
  }

  Result<ExprPtr> ParseTest(ExprPtr subject) {
    auto e = NewExpr(Expr::Kind::kTest, Cur());
    Advance();  // is
    e->negated = SkipName("not");
    SPARROW_ASSIGN_OR_RETURN(e->name, DottedName());
    e->unknown = !IsTest(e->name);
    e->args.push_back(std::move(subject));
    if (IsOp("(")) {
      SPARROW_RETURN_IF_ERROR(ParseArgs(e.get()));
      return e;
    }
    TT t = Cur().type;
    bool starts_primary = t == TT::kName || t == TT::kString || t == TT::kInt || t == TT::kFloat ||
                          IsOp("(") || IsOp("[") || IsOp("{");
    if (starts_primary && !IsName("else") && !IsName("or") && !IsName("and")) {
      if (IsName("is")) return Fail(Cur(), "tests cannot be chained with 'is'");
      SPARROW_ASSIGN_OR_RETURN(auto arg, ParsePrimary());
      SPARROW_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
      e->args.push_back(std::move(arg));
    }
    return e;
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

// jinja2 resolves filters and tests when it compiles, except inside an if statement or a
// conditional expression (a "soft" frame), where a missing one only fails if it runs.
Status CheckUnknown(const Expr* e, bool soft) {
  if (!e) return Status::Ok();
  if (e->kind == Expr::Kind::kCond) soft = true;
  if (e->unknown && !soft) {
    std::string what =
        (e->kind == Expr::Kind::kFilter ? "filter '" : "test '") + e->name + "' is not supported";
    return Unsupported(Located(e->line, e->column, what));
  }
  for (const auto& a : e->args) SPARROW_RETURN_IF_ERROR(CheckUnknown(a.get(), soft));
  for (const auto& [k, a] : e->kwargs) SPARROW_RETURN_IF_ERROR(CheckUnknown(a.get(), soft));
  return Status::Ok();
}

Status CheckUnknown(const Body& body, bool soft) {
  for (const auto& s : body) {
    bool is_if = s->kind == Stmt::Kind::kIf;
    for (const auto& c : s->conditions) SPARROW_RETURN_IF_ERROR(CheckUnknown(c.get(), true));
    for (const auto& b : s->bodies) SPARROW_RETURN_IF_ERROR(CheckUnknown(b, true));
    SPARROW_RETURN_IF_ERROR(CheckUnknown(s->else_body, is_if || soft));
    for (const auto& p : s->params) {
      SPARROW_RETURN_IF_ERROR(CheckUnknown(p.default_value.get(), soft));
    }
    SPARROW_RETURN_IF_ERROR(CheckUnknown(s->target.get(), soft));
    SPARROW_RETURN_IF_ERROR(CheckUnknown(s->expr.get(), soft));
    // Loops, macros, block sets, call and filter blocks open frames of their own, never soft.
    SPARROW_RETURN_IF_ERROR(CheckUnknown(s->condition.get(), false));
    SPARROW_RETURN_IF_ERROR(CheckUnknown(s->body, false));
  }
  return Status::Ok();
}

}  // namespace

Result<Body> Parse(std::vector<Token> tokens) {
  SPARROW_ASSIGN_OR_RETURN(Body body, Parser(std::move(tokens)).ParseTemplate());
  SPARROW_RETURN_IF_ERROR(CheckUnknown(body, false));
  return body;
}

}  // namespace sparrow::jinja
