#pragma once
// The interpreter: renders a parsed template with jinja2's scoping (each loop iteration, macro
// call and block opens a scope, if does not), its default Undefined, and limits on work, output and
// recursion so that no template can run away. One Interpreter renders once; not thread-safe.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/common/result.h"
#include "engine/jinja/ast.h"
#include "engine/jinja/budget.h"
#include "engine/jinja/jinja_template.h"
#include "engine/jinja/value.h"

namespace sparrow::jinja {

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits)
      : limits_(limits), budget_(limits.max_bytes, limits.max_output_bytes) {}

  Result<std::string> Render(const Body& body, Dict context);

  // Services for the built-in filters, tests and functions.
  Result<Value> Call(const Value& callee, CallArgs& args);
  // Python's iteration: the items of a list, tuple or generator (consuming it), the keys of a
  // dict, the characters of a string; nothing for undefined; TypeError for the rest.
  Result<List> Iterate(const Value& v);
  // jinja2's getattr (attribute, then item) and getitem (item, then attribute).
  Result<Value> GetAttr(const Value& obj, const std::string& name);
  Result<Value> GetItem(const Value& obj, const Value& key);
  // Charges `n` units of work; fails once the budget is spent.
  Status Tick(int64_t n = 1);
  // Fails when a string of `size` bytes would exceed the output limit or not fit the byte
  // budget: asked before the string is built.
  Status CheckSize(size_t size) const;
  // Fails when a list of `count` items would exceed the item limit or not fit the byte budget.
  Status CheckItems(size_t count) const;
  // The most bytes the render held at once (for tests and measurements).
  size_t peak_bytes() const { return budget_.peak(); }
  // Remembers a namespace, emptied when the render ends: a namespace may hold itself.
  void TrackNamespace(const Value& ns) { namespaces_.push_back(ns); }
  // The render context (for strftime_now's `sparrow_now`).
  const Value* ContextVar(std::string_view name) const;

 private:
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
  };
  enum class Flow { kNormal, kBreak, kContinue };
  class DepthGuard;

  Status Exec(const Body& body);
  Status ExecStmt(const Stmt& s);
  Status ExecFor(const Stmt& s);
  Status ExecSet(const Stmt& s);
  Status Assign(const Expr& target, const Value& v);
  Status Emit(std::string_view text);
  // Runs `body` in `scope`, collecting its output instead of emitting it.
  Result<std::string> Capture(const Body& body, std::shared_ptr<Scope> scope);
  Value MakeMacro(const Stmt& s, std::shared_ptr<Scope> scope);
  Result<Value> CallMacro(const Stmt& s, const std::shared_ptr<Scope>& closure, CallArgs& args);

  Result<Value> Eval(const Expr& e);
  Result<Value> EvalInner(const Expr& e);
  Result<Value> EvalBinary(const Expr& e);
  Result<Value> EvalCompare(const Expr& e);
  Result<Value> EvalSlice(const Expr& e);
  Result<Value> EvalFilter(const Expr& e, const Value* subject);
  Result<CallArgs> EvalArgs(const Expr& e, size_t first);
  Value Lookup(const std::string& name) const;
  std::shared_ptr<Scope> NewScope(std::shared_ptr<Scope> parent);

  Status BytesExhausted() const;

  RenderLimits limits_;
  // Before every member that holds values: they give their bytes back to it when destroyed.
  RenderBudget budget_;
  Dict context_;
  std::shared_ptr<Scope> scope_;
  // The scopes macros close over: a macro kept in the scope it closes over is a cycle of
  // shared pointers, broken when the render ends.
  std::vector<std::shared_ptr<Scope>> scopes_;
  std::vector<Value> namespaces_;
  std::unordered_map<std::string, Value> globals_;
  std::string* out_ = nullptr;
  Flow flow_ = Flow::kNormal;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  int depth_ = 0;  // statements and expressions being evaluated, one inside the other
};

}  // namespace sparrow::jinja
