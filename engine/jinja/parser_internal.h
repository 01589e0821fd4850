#pragma once
// The parser's class, shared by parser.cc (statements) and parser_expr.cc (expressions).
// Internal to engine/jinja.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/result.h"
#include "engine/jinja/ast.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/parser.h"

namespace sparrow::jinja {

// Recursive descent over the tokens, with jinja2's grammar and precedence.
class Parser {
 public:
  using TT = Token::Type;

  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Body> ParseTemplate();

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
  Status Unexpected(std::string_view expected) const;
  Status ExpectOp(std::string_view op) {
    if (!SkipOp(op)) return Unexpected(std::string("'").append(op).append("'"));
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
  // A node of kind `kind` at the position of `at`; Node is Expr or Stmt.
  template <typename Node>
  static std::unique_ptr<Node> New(typename Node::Kind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }
  ExprPtr NewExpr(Expr::Kind kind, const Token& at) { return New<Expr>(kind, at); }
  StmtPtr NewStmt(Stmt::Kind kind, const Token& at) { return New<Stmt>(kind, at); }

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

  // Parses until a block tag named in `ends` (consumed with its name, which goes to *end).
  Status ParseBody(Body* out, std::initializer_list<std::string_view> ends, std::string* end);

  Status EndTag() { return ExpectType(TT::kBlockEnd, "'%}'"); }

  Status ParseStatement(Body* out);

  Status UnsupportedAt(const Token& at, std::string_view what) const {
    return Unsupported(Located(at.line, at.column, what));
  }

  Status ParseIf(const Token& tok, Body* out);

  Result<ExprPtr> ParseAssignTarget(bool allow_namespace);

  Status ParseFor(const Token& tok, Body* out);

  Status ParseSet(const Token& tok, Body* out);

  template <typename F>
  Status WithLoopDepth(int depth, F f) {
    int saved = loop_depth_;
    loop_depth_ = depth;
    Status st = f();
    loop_depth_ = saved;
    return st;
  }

  Status ParseParams(std::vector<MacroParam>* params);

  Status ParseMacro(const Token& tok, Body* out);

  Status ParseCallBlock(const Token& tok, Body* out);

  Status ParseFilterBlock(const Token& tok, Body* out);

  bool AtTupleEnd() const {
    TT t = Cur().type;
    return t == TT::kVarEnd || t == TT::kBlockEnd || IsOp(")") || IsName("in") || IsName("if") ||
           t == TT::kEnd;
  }

  Result<ExprPtr> ParseTuple(bool with_cond, bool explicit_parens);

  Result<ExprPtr> ParseExpression(bool with_cond);

  ExprPtr Binary(const Token& at, std::string op, ExprPtr l, ExprPtr r) {
    auto b = NewExpr(Expr::Kind::kBinary, at);
    b->op = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  // `or` binds looser than `and`; both are left-associative.
  Result<ExprPtr> ParseOr() { return ParseLogic(true); }
  Result<ExprPtr> ParseLogic(bool is_or);

  Result<ExprPtr> ParseNot();

  Result<ExprPtr> ParseCompare();

  // The arithmetic operators, loosest first, each level left-associative over the next.
  Result<ExprPtr> ParseArith(size_t level = 0);

  Result<ExprPtr> ParseUnary(bool with_filter);

  Result<ExprPtr> ParsePrimary();

  Result<ExprPtr> ParseCollection(const Token& tok);

  Result<ExprPtr> ParsePostfix(ExprPtr e);

  Result<ExprPtr> ParseSubscript(const Token& at, ExprPtr subject);

  Status ParseArgs(Expr* e);

  Result<ExprPtr> ParseCall(ExprPtr callee);

  Result<std::string> DottedName();

  // `subject` is null for the filters of a filter block.
  Result<ExprPtr> ParseFilter(ExprPtr subject);

  Result<ExprPtr> ParseTest(ExprPtr subject);

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace sparrow::jinja
