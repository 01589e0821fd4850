#include "engine/jinja/interpreter.h"

#include "engine/jinja/builtins.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/strings.h"

namespace sparrow::jinja {
namespace {

// Errors from built-ins carry no position; the innermost expression that saw one adds it.
Status Locate(int line, int column, Status st) {
  if (st.ok() || st.message().rfind("chat template line ", 0) == 0) return st;
  return Status(st.code(), Located(line, column, st.message()));
}

// Holds a charge on the budget for a buffer that is not a Value (a loop's items).
class HeldBytes {
 public:
  HeldBytes(RenderBudget* budget, size_t bytes) : budget_(budget), bytes_(bytes) {
    budget_->Charge(bytes_);
  }
  ~HeldBytes() { budget_->Release(bytes_); }
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;

 private:
  RenderBudget* budget_;
  size_t bytes_;
};

}  // namespace

Result<std::string> Interpreter::Render(const Body& body, Dict context) {
  BudgetScope budget_scope(&budget_);
  globals_ = MakeGlobals();
  context_ = context;
  scope_ = NewScope(nullptr);
  for (auto& [k, v] : context.items) scope_->vars[k.Str()] = std::move(v);
  std::string out;
  out_ = &out;
  Status st = Exec(body);
  for (auto& s : scopes_) {
    s->vars.clear();
    s->parent.reset();
  }
  for (auto& ns : namespaces_) ns.dict().items.clear();
  scopes_.clear();
  namespaces_.clear();
  scope_.reset();
  if (!st.ok()) return st;
  // A builder that stopped short in the last statement has not been seen by a step yet.
  if (budget_.exhausted()) return BytesExhausted();
  return out;
}

std::shared_ptr<Interpreter::Scope> Interpreter::NewScope(std::shared_ptr<Scope> parent) {
  auto s = std::make_shared<Scope>();
  s->parent = std::move(parent);
  return s;
}

Status Interpreter::Tick(int64_t n) {
  steps_ += n;
  if (steps_ + budget_.byte_steps() > limits_.max_steps) {
    return ResourceExhausted("the template did more than " + std::to_string(limits_.max_steps) +
                             " steps of work (the step limit)");
  }
  if (budget_.exhausted()) return BytesExhausted();
  return Status::Ok();
}

Status Interpreter::BytesExhausted() const {
  return jinja::BytesExhausted(budget_);
}

Status Interpreter::CheckItems(size_t count) const {
  if (count > limits_.max_items) {
    return ResourceExhausted("the template built a sequence of over " +
                             std::to_string(limits_.max_items) + " items (the item limit)");
  }
  if (!budget_.Fits(count * sizeof(Value))) return BytesExhausted();
  return Status::Ok();
}

Status Interpreter::CheckSize(size_t size) const {
  if (size > limits_.max_output_bytes) {
    return ResourceExhausted("the template built a value or output over " +
                             std::to_string(limits_.max_output_bytes) +
                             " bytes (the output limit)");
  }
  if (budget_.exhausted() || !budget_.Fits(size)) return BytesExhausted();
  return Status::Ok();
}

const Value* Interpreter::ContextVar(std::string_view name) const {
  return context_.Find(name);
}

Status Interpreter::Emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    return CheckSize(out_->size() + text.size());
  }
  if (!budget_.Fits(text.size())) return BytesExhausted();
  // The buffer is charged by what it allocates; Capture hands the charge to the value it makes.
  const size_t before = out_->capacity();
  out_->append(text);
  budget_.Charge(out_->capacity() - before);
  return Status::Ok();
}

Status Interpreter::Exec(const Body& body) {
  for (const auto& s : body) {
    SPARROW_RETURN_IF_ERROR(Locate(s->line, s->column, ExecStmt(*s)));
    // A builder that stopped short at the byte limit returned a partial value.
    if (budget_.exhausted()) return Locate(s->line, s->column, BytesExhausted());
    if (flow_ != Flow::kNormal) break;
  }
  return Status::Ok();
}

Result<std::string> Interpreter::Capture(const Body& body, std::shared_ptr<Scope> scope) {
  std::string buf;
  std::string* saved_out = out_;
  std::shared_ptr<Scope> saved_scope = std::move(scope_);
  out_ = &buf;
  scope_ = std::move(scope);
  Status st = Exec(body);
  out_ = saved_out;
  scope_ = std::move(saved_scope);
  budget_.Release(buf.capacity());
  if (!st.ok()) return st;
  return buf;
}

// Guards the C++ stack: statements and expressions nest through macros at run time.
class Interpreter::DepthGuard {
 public:
  explicit DepthGuard(Interpreter* in) : in_(in) { ++in_->depth_; }
  ~DepthGuard() { --in_->depth_; }
  Status Check() const {
    if (in_->depth_ > in_->limits_.max_depth) {
      return ResourceExhausted("the template nests deeper than " +
                               std::to_string(in_->limits_.max_depth) + " levels at run time");
    }
    return Status::Ok();
  }

 private:
  Interpreter* in_;
};

Status Interpreter::ExecStmt(const Stmt& s) {
  SPARROW_RETURN_IF_ERROR(Tick());
  DepthGuard guard(this);
  SPARROW_RETURN_IF_ERROR(guard.Check());
  switch (s.kind) {
    case Stmt::Kind::kText:
      return Emit(s.text);
    case Stmt::Kind::kPrint: {
      SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
      return Emit(v.Str());
    }
    case Stmt::Kind::kIf:
      for (size_t i = 0; i < s.conditions.size(); ++i) {
        SPARROW_ASSIGN_OR_RETURN(Value c, Eval(*s.conditions[i]));
        if (c.Truthy()) return Exec(s.bodies[i]);
      }
      return Exec(s.else_body);
    case Stmt::Kind::kFor:
      return ExecFor(s);
    case Stmt::Kind::kSet:
      return ExecSet(s);
    case Stmt::Kind::kMacro:
      scope_->vars[s.text] = MakeMacro(s, scope_);
      return Status::Ok();
    case Stmt::Kind::kCallBlock: {
      const Expr& call = *s.expr;
      SPARROW_ASSIGN_OR_RETURN(Value callee, Eval(*call.args[0]));
      SPARROW_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(call, 1));
      Value caller = MakeMacro(s, scope_);
      args.keyword.emplace_back("caller", caller);
      Result<Value> r = Call(callee, args);
      if (!r.ok()) return Locate(call.line, call.column, r.status());
      return Emit(r->Str());
    }
    case Stmt::Kind::kFilterBlock: {
      SPARROW_ASSIGN_OR_RETURN(std::string text, Capture(s.body, NewScope(scope_)));
      Value subject = Value::String(std::move(text));
      SPARROW_ASSIGN_OR_RETURN(Value v, EvalFilter(*s.expr, &subject));
      return Emit(v.Str());
    }
    case Stmt::Kind::kBreak:
      flow_ = Flow::kBreak;
      return Status::Ok();
    case Stmt::Kind::kContinue:
      flow_ = Flow::kContinue;
      return Status::Ok();
    case Stmt::Kind::kScope: {
      SPARROW_ASSIGN_OR_RETURN(std::string text, Capture(s.body, NewScope(scope_)));
      return Emit(text);
    }
  }
  return Internal("unknown statement");
}

Status Interpreter::ExecFor(const Stmt& s) {
  SPARROW_ASSIGN_OR_RETURN(Value seq, Eval(*s.expr));
  Result<List> iterated = Iterate(seq);
  if (!iterated.ok()) return Locate(s.expr->line, s.expr->column, iterated.status());
  List items = std::move(iterated).value();
  HeldBytes held(&budget_, items.capacity() * sizeof(Value));
  // Each iteration has a scope of its own: what one sets, the next does not see (jinja2).
  std::shared_ptr<Scope> saved = scope_;
  auto run = [&]() -> Status {
    if (s.condition) {
      List kept;
      for (auto& item : items) {
        SPARROW_RETURN_IF_ERROR(Tick());
        scope_ = NewScope(saved);
        SPARROW_RETURN_IF_ERROR(Assign(*s.target, item));
        SPARROW_ASSIGN_OR_RETURN(Value keep, Eval(*s.condition));
        if (keep.Truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const size_t n = items.size();
    for (size_t i = 0; i < n; ++i) {
      SPARROW_RETURN_IF_ERROR(Tick());
      scope_ = NewScope(saved);
      SPARROW_RETURN_IF_ERROR(Assign(*s.target, items[i]));
      auto idx = static_cast<int64_t>(i);
      auto len = static_cast<int64_t>(n);
      Dict loop;
      auto put = [&loop](const char* key, Value v) {
        loop.items.emplace_back(Value::String(key), std::move(v));
      };
      put("index", Value::Int(idx + 1));
      put("index0", Value::Int(idx));
      put("revindex", Value::Int(len - idx));
      put("revindex0", Value::Int(len - idx - 1));
      put("first", Value::Bool(i == 0));
      put("last", Value::Bool(i + 1 == n));
      put("length", Value::Int(len));
      put("depth", Value::Int(1));
      put("depth0", Value::Int(0));
      put("previtem", i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
      put("nextitem", i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item"));
      put("cycle", Value::MakeCallable("cycle", [idx](Interpreter&, CallArgs& a) -> Result<Value> {
            if (a.positional.empty()) return InvalidArgument("no items for cycling given");
            return a.positional[static_cast<size_t>(idx) % a.positional.size()];
          }));
      scope_->vars["loop"] = Value::MakeDict(std::move(loop));
      SPARROW_RETURN_IF_ERROR(Exec(s.body));
      if (flow_ == Flow::kBreak) {
        flow_ = Flow::kNormal;
        break;
      }
      flow_ = Flow::kNormal;
    }
    if (n == 0) {
      scope_ = NewScope(saved);
      return Exec(s.else_body);
    }
    return Status::Ok();
  };
  Status st = run();
  scope_ = saved;
  return st;
}

Status Interpreter::ExecSet(const Stmt& s) {
  if (s.expr) {
    SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
    return Locate(s.line, s.column, Assign(*s.target, v));
  }
  SPARROW_ASSIGN_OR_RETURN(std::string text, Capture(s.body, NewScope(scope_)));
  return Assign(*s.target, Value::String(std::move(text)));
}

Status Interpreter::Assign(const Expr& target, const Value& v) {
  switch (target.kind) {
    case Expr::Kind::kName:
      scope_->vars[target.name] = v;
      return Status::Ok();
    case Expr::Kind::kTuple: {
      SPARROW_ASSIGN_OR_RETURN(List items, Iterate(v));
      size_t want = target.args.size();
      if (items.size() != want) {
        return InvalidArgument(
            items.size() < want
                ? "not enough values to unpack (expected " + std::to_string(want) + ", got " +
                      std::to_string(items.size()) + ")"
                : "too many values to unpack (expected " + std::to_string(want) + ")");
      }
      for (size_t i = 0; i < want; ++i) SPARROW_RETURN_IF_ERROR(Assign(*target.args[i], items[i]));
      return Status::Ok();
    }
    case Expr::Kind::kGetAttr: {
      Value ns = Lookup(target.args[0]->name);
      if (ns.kind() != Value::Kind::kNamespace) {
        return InvalidArgument("cannot assign attribute on non-namespace object");
      }
      ns.dict().Set(target.name, v);
      return Status::Ok();
    }
    default:
      return Internal("bad assignment target");
  }
}

Value Interpreter::MakeMacro(const Stmt& s, std::shared_ptr<Scope> scope) {
  scopes_.push_back(scope);  // the macro may end up in the scope it closes over
  const Stmt* stmt = &s;
  std::string name = s.kind == Stmt::Kind::kMacro ? s.text : "caller";
  return Value::MakeCallable(name, [stmt, scope](Interpreter& in, CallArgs& args) {
    return in.CallMacro(*stmt, scope, args);
  });
}

Result<Value> Interpreter::CallMacro(const Stmt& s, const std::shared_ptr<Scope>& closure,
                                     CallArgs& args) {
  const std::string name = s.kind == Stmt::Kind::kMacro ? s.text : "caller";
  if (call_depth_ >= limits_.max_call_depth) {
    return ResourceExhausted("macro calls nest deeper than " +
                             std::to_string(limits_.max_call_depth) + " (endless recursion?)");
  }
  if (args.positional.size() > s.params.size() && !s.catch_varargs) {
    return InvalidArgument("macro '" + name + "' takes not more than " +
                           std::to_string(s.params.size()) + " argument(s)");
  }
  auto scope = NewScope(closure);
  std::vector<bool> bound(s.params.size(), false);
  List varargs;
  Dict kwargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i >= s.params.size()) {
      varargs.push_back(args.positional[i]);
      continue;
    }
    scope->vars[s.params[i].name] = args.positional[i];
    bound[i] = true;
  }
  for (auto& [key, v] : args.keyword) {
    if (key == "caller") {
      scope->vars["caller"] = v;
      continue;
    }
    size_t i = 0;
    while (i < s.params.size() && s.params[i].name != key) ++i;
    if (i == s.params.size() && s.catch_kwargs) {
      kwargs.Set(key, v);
      continue;
    }
    if (i == s.params.size()) {
      return InvalidArgument("macro '" + name + "' takes no keyword argument '" + key + "'");
    }
    if (bound[i]) {
      return InvalidArgument("macro '" + name + "' got multiple values for argument '" + key + "'");
    }
    scope->vars[key] = v;
    bound[i] = true;
  }
  if (s.catch_varargs) scope->vars["varargs"] = Value::MakeTuple(std::move(varargs));
  if (s.catch_kwargs) scope->vars["kwargs"] = Value::MakeDict(std::move(kwargs));
  std::shared_ptr<Scope> saved = scope_;
  scope_ = scope;
  for (size_t i = 0; i < s.params.size(); ++i) {
    if (bound[i]) continue;
    const MacroParam& p = s.params[i];
    if (p.default_value) {
      Result<Value> d = Eval(*p.default_value);
      if (!d.ok()) {
        scope_ = saved;
        return d.status();
      }
      scope->vars[p.name] = std::move(d).value();
    } else {
      scope->vars[p.name] = Value::Undefined("parameter '" + p.name + "' was not provided");
    }
  }
  scope_ = saved;
  ++call_depth_;
  Result<std::string> text = Capture(s.body, scope);
  --call_depth_;
  if (!text.ok()) return text.status();
  return Value::String(std::move(text).value());
}

Value Interpreter::Lookup(const std::string& name) const {
  for (const Scope* s = scope_.get(); s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  return Value::Undefined("'" + name + "' is undefined");
}

Result<Value> Interpreter::Call(const Value& callee, CallArgs& args) {
  SPARROW_RETURN_IF_ERROR(Tick());
  if (callee.is_callable()) return callee.callable().fn(*this, args);
  if (callee.is_undefined()) return UndefinedError(callee);
  return InvalidArgument(
      std::string("'").append(callee.TypeName()).append("' object is not callable"));
}

Result<List> Interpreter::Iterate(const Value& v) {
  List out;
  switch (v.kind()) {
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      SPARROW_RETURN_IF_ERROR(CheckItems(v.list().size()));
      out = v.list();
      break;
    case Value::Kind::kDict:
      SPARROW_RETURN_IF_ERROR(CheckItems(v.dict().items.size()));
      for (const auto& [k, e] : v.dict().items) out.push_back(k);
      break;
    case Value::Kind::kString:
      // Charged before building: a long string would make millions of one-character values.
      SPARROW_RETURN_IF_ERROR(CheckItems(CodePointLength(v.as_string())));
      if (!budget_.Fits(CodePointLength(v.as_string()) * RenderBudget::kValueOverhead)) {
        return BytesExhausted();
      }
      SPARROW_RETURN_IF_ERROR(Tick(static_cast<int64_t>(CodePointLength(v.as_string()))));
      for (uint32_t c : CodePoints(v.as_string())) {
        out.push_back(Value::String(FromCodePoints({c}, 0, 1)));
      }
      break;
    case Value::Kind::kGenerator:
      if (!v.generator().consumed) out = std::move(v.generator().items);
      v.generator().consumed = true;
      v.generator().items.clear();
      break;
    case Value::Kind::kUndefined:
      break;
    default:
      return InvalidArgument("'" + v.TypeName() + "' object is not iterable");
  }
  SPARROW_RETURN_IF_ERROR(Tick(static_cast<int64_t>(out.size())));
  return out;
}

Result<Value> Interpreter::GetAttr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      return UndefinedError(obj);
    case Value::Kind::kDict:
    case Value::Kind::kString:
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      // Python finds a method before jinja2 falls back to the item: d.items is the method.
      if (std::optional<Value> m = GetMethod(obj, name)) return *m;
      if (obj.is_dict()) {
        if (const Value* v = obj.dict().Find(name)) return *v;
      }
      break;
    case Value::Kind::kNamespace:
      if (const Value* v = obj.dict().Find(name)) return *v;
      break;
    default:
      break;
  }
  return Value::Undefined(
      std::string("'").append(ObjectTypeRepr(obj)).append("' has no attribute ") +
      ReprString(name));
}

Result<Value> Interpreter::GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_mapping()) {
    if (const Value* v = obj.dict().Find(key)) return *v;
  }
  if ((obj.is_list_like() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_string()) {
      auto cps = CodePoints(obj.as_string());
      auto n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n)
        return Value::String(
            FromCodePoints(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    } else {
      auto n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[static_cast<size_t>(i)];
    }
  }
  if (key.is_string()) return GetAttr(obj, key.as_string());
  return Value::Undefined(ObjectTypeRepr(obj) + " has no element " + key.Repr());
}

Result<CallArgs> Interpreter::EvalArgs(const Expr& e, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i]));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*x));
    args.keyword.emplace_back(k, std::move(v));
  }
  return args;
}

Result<Value> Interpreter::EvalFilter(const Expr& e, const Value* subject) {
  if (e.unknown) {
    return Unsupported(Located(e.line, e.column, "filter '" + e.name + "' is not supported"));
  }
  Value v;
  if (e.args[0]) {
    Result<Value> r =
        e.args[0]->kind == Expr::Kind::kFilter ? EvalFilter(*e.args[0], subject) : Eval(*e.args[0]);
    if (!r.ok()) return r.status();
    v = std::move(r).value();
  } else {
    v = *subject;
  }
  SPARROW_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
  Result<Value> r = ApplyFilter(*this, e.name, v, args);
  if (!r.ok()) return Locate(e.line, e.column, r.status());
  return r;
}

Result<Value> Interpreter::Eval(const Expr& e) {
  SPARROW_RETURN_IF_ERROR(Tick());
  DepthGuard guard(this);
  SPARROW_RETURN_IF_ERROR(guard.Check());
  Result<Value> r = EvalInner(e);
  if (!r.ok()) return Locate(e.line, e.column, r.status());
  return r;
}

}  // namespace sparrow::jinja
