#include "engine/jinja/parser.h"

#include <initializer_list>

#include "engine/jinja/parser_internal.h"

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

}  // namespace

Status Parser::Unexpected(std::string_view expected) const {
  return Fail(Cur(), "expected " + std::string(expected) + ", got " + Describe(Cur()));
}

Result<Body> Parser::ParseTemplate() {
  Body body;
  std::string end;
  SPARROW_RETURN_IF_ERROR(ParseBody(&body, {}, &end));
  return body;
}

// Parses until a block tag named in `ends` (consumed with its name, which goes to *end).
Status Parser::ParseBody(Body* out, std::initializer_list<std::string_view> ends,
                         std::string* end) {
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

Status Parser::ParseStatement(Body* out) {
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

Status Parser::ParseIf(const Token& tok, Body* out) {
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

Result<ExprPtr> Parser::ParseAssignTarget(bool allow_namespace) {
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

Status Parser::ParseFor(const Token& tok, Body* out) {
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

Status Parser::ParseSet(const Token& tok, Body* out) {
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
  SPARROW_RETURN_IF_ERROR(WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endset"}, &end); }));
  out->push_back(std::move(s));
  return EndTag();
}

Status Parser::ParseParams(std::vector<MacroParam>* params) {
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

namespace {

bool Names(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == Expr::Kind::kName && e->name == name) return true;
  for (const auto& a : e->args) {
    if (Names(a.get(), name)) return true;
  }
  for (const auto& [k, a] : e->kwargs) {
    if (Names(a.get(), name)) return true;
  }
  return false;
}

bool Names(const Body& body, std::string_view name) {
  for (const auto& s : body) {
    for (const auto& c : s->conditions) {
      if (Names(c.get(), name)) return true;
    }
    for (const auto& b : s->bodies) {
      if (Names(b, name)) return true;
    }
    for (const auto& p : s->params) {
      if (Names(p.default_value.get(), name)) return true;
    }
    if (Names(s->expr.get(), name) || Names(s->condition.get(), name) || Names(s->body, name) ||
        Names(s->else_body, name)) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status Parser::ParseMacro(const Token& tok, Body* out) {
  auto s = NewStmt(Stmt::Kind::kMacro, tok);
  SPARROW_ASSIGN_OR_RETURN(s->text, ExpectName());
  SPARROW_RETURN_IF_ERROR(ParseParams(&s->params));
  SPARROW_RETURN_IF_ERROR(EndTag());
  std::string end;
  SPARROW_RETURN_IF_ERROR(
      WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endmacro"}, &end); }));
  s->catch_varargs = Names(s->body, "varargs");
  s->catch_kwargs = Names(s->body, "kwargs");
  out->push_back(std::move(s));
  return EndTag();
}

Status Parser::ParseCallBlock(const Token& tok, Body* out) {
  auto s = NewStmt(Stmt::Kind::kCallBlock, tok);
  if (IsOp("(")) SPARROW_RETURN_IF_ERROR(ParseParams(&s->params));
  SPARROW_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
  if (s->expr->kind != Expr::Kind::kCall) return Fail(tok, "expected a call after 'call'");
  SPARROW_RETURN_IF_ERROR(EndTag());
  std::string end;
  SPARROW_RETURN_IF_ERROR(WithLoopDepth(0, [&] { return ParseBody(&s->body, {"endcall"}, &end); }));
  out->push_back(std::move(s));
  return EndTag();
}

Status Parser::ParseFilterBlock(const Token& tok, Body* out) {
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

namespace {

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
