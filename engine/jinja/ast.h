#pragma once
// The syntax tree of a parsed template: expressions and statements as tagged structs that the
// interpreter walks. Immutable once parsed, so one tree may be rendered by many threads.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/jinja/value.h"

namespace sparrow::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // args
    kTuple,    // args
    kDict,     // args: key, value, key, value...
    kUnary,    // op ("-", "+", "not"), args[0]
    kBinary,   // op, args[0], args[1]; op is also "and", "or"
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2]...: ==, !=, <, <=, >, >=, in, not in
    kCond,     // args: then, condition, else (null when absent)
    kGetAttr,  // args[0].name
    kGetItem,  // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]], each bound may be null
    kCall,     // args[0](args[1:], kwargs)
    kFilter,   // args[0] | name(args[1:], kwargs); args[0] is null in a filter block
    kTest,     // args[0] is [not] name(args[1:], kwargs)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string name;  // name, attribute, filter or test
  std::string op;
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // `is not`
  bool unknown = false;          // a filter or test jinja2 lacks, allowed in a conditional branch
  Value value;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kPrint,        // {{ expr }}
    kIf,           // conditions[i] guards bodies[i]; else_body
    kFor,          // for target in expr [if condition]: body else else_body
    kSet,          // set target = expr, or block set target (body) when expr is null
    kMacro,        // macro name(params): body
    kCallBlock,    // call(params) expr: body (the body is the macro `caller`)
    kFilterBlock,  // filter expr: body; expr is a chain of kFilter with a null subject
    kBreak,
    kContinue,
    kScope,  // a body run in its own scope: transformers' {% generation %} block
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;  // text, or the macro's name
  ExprPtr target;    // for and set
  ExprPtr expr;
  ExprPtr condition;  // the for loop's filter
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<MacroParam> params;
  // A macro whose body names `varargs` or `kwargs` takes extra arguments into them (jinja2).
  bool catch_varargs = false;
  bool catch_kwargs = false;
};

}  // namespace sparrow::jinja
