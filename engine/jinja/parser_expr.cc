// The expression half of the parser: jinja2's precedence, from conditional expressions down
// to literals, postfix operators, filters and tests.
#include <charconv>
#include <cstdlib>

#include "engine/jinja/builtins.h"
#include "engine/jinja/parser_internal.h"

namespace sparrow::jinja {

Result<ExprPtr> Parser::ParseTuple(bool with_cond, bool explicit_parens) {
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

Result<ExprPtr> Parser::ParseExpression(bool with_cond) {
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

Result<ExprPtr> Parser::ParseLogic(bool is_or) {
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

Result<ExprPtr> Parser::ParseNot() {
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

Result<ExprPtr> Parser::ParseCompare() {
  SPARROW_ASSIGN_OR_RETURN(auto l, ParseArith());
  ExprPtr chain;  // a < b < c is one node: Python evaluates b once
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
    if (!chain) {
      chain = NewExpr(Expr::Kind::kCompare, at);
      chain->args.push_back(std::move(l));
    }
    chain->ops.push_back(op);
    chain->args.push_back(std::move(r));
  }
  if (chain) return chain;
  return l;
}

// The arithmetic operators, loosest first, each level left-associative over the next.
Result<ExprPtr> Parser::ParseArith(size_t level) {
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

Result<ExprPtr> Parser::ParseUnary(bool with_filter) {
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

Result<ExprPtr> Parser::ParsePrimary() {
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

Result<ExprPtr> Parser::ParseCollection(const Token& tok) {
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

Result<ExprPtr> Parser::ParsePostfix(ExprPtr e) {
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

Result<ExprPtr> Parser::ParseSubscript(const Token& at, ExprPtr subject) {
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

Status Parser::ParseArgs(Expr* e) {
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

Result<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  auto e = NewExpr(Expr::Kind::kCall, Cur());
  e->line = callee->line;  // errors of a call point at what is called
  e->column = callee->column;
  e->args.push_back(std::move(callee));
  SPARROW_RETURN_IF_ERROR(ParseArgs(e.get()));
  return e;
}

Result<std::string> Parser::DottedName() {
  SPARROW_ASSIGN_OR_RETURN(std::string n, ExpectName());
  while (SkipOp(".")) {
    SPARROW_ASSIGN_OR_RETURN(std::string part, ExpectName());
    n += "." + part;
  }
  return n;
}

// `subject` is null for the filters of a filter block.
Result<ExprPtr> Parser::ParseFilter(ExprPtr subject) {
  auto e = NewExpr(Expr::Kind::kFilter, Cur());
  SPARROW_ASSIGN_OR_RETURN(e->name, DottedName());
  e->unknown = !IsFilter(e->name);
  e->args.push_back(std::move(subject));
  if (IsOp("(")) SPARROW_RETURN_IF_ERROR(ParseArgs(e.get()));
  return e;
}

Result<ExprPtr> Parser::ParseTest(ExprPtr subject) {
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

}  // namespace sparrow::jinja
