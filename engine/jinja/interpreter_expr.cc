// Expression evaluation: Python's operators on Values.
#include <cmath>

#include "engine/jinja/builtins.h"
#include "engine/jinja/interpreter.h"
#include "engine/jinja/strings.h"

namespace sparrow::jinja {
namespace {

Status BadOperands(std::string_view op, const Value& l, const Value& r) {
  return InvalidArgument("unsupported operand type(s) for " + std::string(op) + ": '" +
                         l.TypeName() + "' and '" + r.TypeName() + "'");
}

// Runs a checked builtin such as __builtin_add_overflow.
template <typename F>
Result<Value> CheckedInt(F op, int64_t a, int64_t b) {
  int64_t v = 0;
  if (op(a, b, &v)) return OutOfRange("integer overflow");
  return Value::Int(v);
}

// Python's floor division and modulo: the result takes the sign of the divisor.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Result<Value> Arithmetic(Interpreter& in, const std::string& op, const Value& l, const Value& r) {
  if (l.is_undefined()) return UndefinedError(l);
  if (r.is_undefined()) return UndefinedError(r);
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      // Escaping makes at most five bytes of one ("&amp;").
      const size_t grow = (l.is_markup() || r.is_markup()) ? 5 : 1;
      SPARROW_RETURN_IF_ERROR(in.CheckSize(grow * (l.as_string().size() + r.as_string().size())));
      if (l.is_markup() || r.is_markup()) {
        // Markup + str escapes the str (markupsafe), whichever side the Markup is on.
        return Value::Markup((l.is_markup() ? l.as_string() : EscapeHtml(l.as_string())) +
                             (r.is_markup() ? r.as_string() : EscapeHtml(r.as_string())));
      }
      return Value::String(l.as_string() + r.as_string());
    }
    if (l.is_list_like() && l.kind() == r.kind()) {
      SPARROW_RETURN_IF_ERROR(in.CheckItems(l.list().size() + r.list().size()));
      List out = l.list();
      out.insert(out.end(), r.list().begin(), r.list().end());
      return l.kind() == Value::Kind::kList ? Value::MakeList(std::move(out))
                                            : Value::MakeTuple(std::move(out));
    }
    if (l.is_string() || l.is_list_like()) {
      return InvalidArgument("can only concatenate " + l.TypeName() + " (not \"" + r.TypeName() +
                             "\") to " + l.TypeName());
    }
  }
  if (op == "*" && (l.is_string() || l.is_list_like() || r.is_string() || r.is_list_like())) {
    const Value& seq = (l.is_string() || l.is_list_like()) ? l : r;
    const Value& count = &seq == &l ? r : l;
    if (!count.is_int() && !count.is_bool()) return BadOperands(op, l, r);
    int64_t n = std::max<int64_t>(count.as_int(), 0);
    size_t unit = seq.is_string() ? seq.as_string().size() : seq.list().size();
    if (unit == 0) n = 0;
    if (unit != 0 && static_cast<uint64_t>(n) > (size_t{1} << 40) / unit) {
      return in.CheckSize(SIZE_MAX);
    }
    SPARROW_RETURN_IF_ERROR(seq.is_string() ? in.CheckSize(unit * static_cast<size_t>(n))
                                            : in.CheckItems(unit * static_cast<size_t>(n)));
    if (seq.is_string()) {
      std::string out;
      out.reserve(unit * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) out += seq.as_string();
      return Value::String(std::move(out));
    }
    List out;
    out.reserve(unit * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
    return seq.kind() == Value::Kind::kList ? Value::MakeList(std::move(out))
                                            : Value::MakeTuple(std::move(out));
  }
  if (op == "%" && l.is_string()) {
    SPARROW_ASSIGN_OR_RETURN(std::string s, PercentFormat(l.as_string(), r));
    SPARROW_RETURN_IF_ERROR(in.CheckSize(s.size()));
    return Value::String(std::move(s));
  }
  if (!l.is_number() || !r.is_number()) return BadOperands(op, l, r);
  bool floats = l.kind() == Value::Kind::kFloat || r.kind() == Value::Kind::kFloat;
  if (op == "/" || floats) {
    double a = l.as_double();
    double b = r.as_double();
    if (op == "+") return Value::Float(a + b);
    if (op == "-") return Value::Float(a - b);
    if (op == "*") return Value::Float(a * b);
    if (op == "**") return Value::Float(std::pow(a, b));
    if (b == 0) return InvalidArgument("division by zero");
    if (op == "/") return Value::Float(a / b);
    if (op == "//") return Value::Float(std::floor(a / b));
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return Value::Float(m);
  }
  int64_t a = l.as_int();
  int64_t b = r.as_int();
  if (op == "+") {
    return CheckedInt(
        [](int64_t x, int64_t y, int64_t* r) { return __builtin_add_overflow(x, y, r); }, a, b);
  }
  if (op == "-") {
    return CheckedInt(
        [](int64_t x, int64_t y, int64_t* r) { return __builtin_sub_overflow(x, y, r); }, a, b);
  }
  if (op == "*") {
    return CheckedInt(
        [](int64_t x, int64_t y, int64_t* r) { return __builtin_mul_overflow(x, y, r); }, a, b);
  }
  if (op == "**") {
    if (b < 0) return Value::Float(std::pow(static_cast<double>(a), static_cast<double>(b)));
    if (a == 0 || a == 1) return Value::Int(b == 0 ? 1 : a);
    if (a == -1) return Value::Int(b % 2 == 0 ? 1 : -1);
    int64_t acc = 1;  // |a| >= 2 overflows within 63 rounds
    for (int64_t i = 0; i < b; ++i) {
      if (__builtin_mul_overflow(acc, a, &acc)) return OutOfRange("integer overflow");
    }
    return Value::Int(acc);
  }
  if (b == 0) return InvalidArgument("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) return OutOfRange("integer overflow");
  if (op == "//") return Value::Int(FloorDiv(a, b));
  return Value::Int(a - FloorDiv(a, b) * b);
}

Result<bool> CompareOp(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return l.Equals(r);
  if (op == "!=") return !l.Equals(r);
  if (op == "in" || op == "not in") {
    SPARROW_ASSIGN_OR_RETURN(bool in, Contains(r, l));
    return in == (op == "in");
  }
  if (l.is_undefined()) return UndefinedError(l);
  if (r.is_undefined()) return UndefinedError(r);
  bool swap = op == ">" || op == "<=";
  SPARROW_ASSIGN_OR_RETURN(bool less, swap ? Less(r, l) : Less(l, r));
  return op.size() == 1 ? less : !less;
}

Result<std::optional<int64_t>> SliceBound(const Value& v) {
  if (v.is_none() || v.is_undefined()) return std::optional<int64_t>();
  if (!v.is_int() && !v.is_bool()) {
    return InvalidArgument("slice indices must be integers or None");
  }
  return std::optional<int64_t>(v.as_int());
}

}  // namespace

Result<Value> Interpreter::EvalInner(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.value;
    case Expr::Kind::kName:
      return Lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      for (const auto& a : e.args) {
        SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*a));
        items.push_back(std::move(v));
      }
      return e.kind == Expr::Kind::kList ? Value::MakeList(std::move(items))
                                         : Value::MakeTuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        SPARROW_ASSIGN_OR_RETURN(Value k, Eval(*e.args[i]));
        SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1]));
        if (k.is_list_like() || k.is_mapping() || k.is_undefined()) {
          return InvalidArgument("unhashable type: '" + k.TypeName() + "'");
        }
        d.Set(std::move(k), std::move(v));
      }
      return Value::MakeDict(std::move(d));
    }
    case Expr::Kind::kUnary: {
      SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
      if (e.op == "not") return Value::Bool(!v.Truthy());
      if (v.is_undefined()) return UndefinedError(v);
      if (!v.is_number()) {
        return InvalidArgument("bad operand type for unary " + e.op + ": '" + v.TypeName() + "'");
      }
      if (e.op == "+") return v.is_bool() ? Value::Int(v.as_int()) : v;
      if (v.kind() == Value::Kind::kFloat) return Value::Float(-v.as_double());
      if (v.as_int() == INT64_MIN) return OutOfRange("integer overflow");
      return Value::Int(-v.as_int());
    }
    case Expr::Kind::kBinary:
      return EvalBinary(e);
    case Expr::Kind::kCompare:
      return EvalCompare(e);
    case Expr::Kind::kCond: {
      SPARROW_ASSIGN_OR_RETURN(Value c, Eval(*e.args[1]));
      if (c.Truthy()) return Eval(*e.args[0]);
      if (e.args[2]) return Eval(*e.args[2]);
      return Value::Undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
    case Expr::Kind::kGetAttr: {
      SPARROW_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
      return GetAttr(obj, e.name);
    }
    case Expr::Kind::kGetItem: {
      SPARROW_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
      SPARROW_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1]));
      return GetItem(obj, key);
    }
    case Expr::Kind::kSlice:
      return EvalSlice(e);
    case Expr::Kind::kCall: {
      SPARROW_ASSIGN_OR_RETURN(Value callee, Eval(*e.args[0]));
      SPARROW_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
      return Call(callee, args);
    }
    case Expr::Kind::kFilter:
      return EvalFilter(e, nullptr);
    case Expr::Kind::kTest: {
      if (e.unknown) return Unsupported("test '" + e.name + "' is not supported");
      SPARROW_ASSIGN_OR_RETURN(Value subject, Eval(*e.args[0]));
      SPARROW_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
      SPARROW_ASSIGN_OR_RETURN(bool r, ApplyTest(*this, e.name, subject, args));
      return Value::Bool(r != e.negated);
    }
  }
  return Internal("unknown expression");
}

Result<Value> Interpreter::EvalBinary(const Expr& e) {
  SPARROW_ASSIGN_OR_RETURN(Value l, Eval(*e.args[0]));
  if (e.op == "and") return l.Truthy() ? Eval(*e.args[1]) : l;
  if (e.op == "or") return l.Truthy() ? l : Eval(*e.args[1]);
  SPARROW_ASSIGN_OR_RETURN(Value r, Eval(*e.args[1]));
  const std::string& op = e.op;
  if (op == "~") {
    // Strings are joined without a copy of each side; other values are made text first.
    std::string l_text = l.is_string() ? std::string() : l.Str();
    std::string r_text = r.is_string() ? std::string() : r.Str();
    const std::string& a = l.is_string() ? l.as_string() : l_text;
    const std::string& b = r.is_string() ? r.as_string() : r_text;
    SPARROW_RETURN_IF_ERROR(CheckSize(a.size() + b.size()));
    std::string s;
    s.reserve(a.size() + b.size());
    s.append(a).append(b);
    return Value::String(std::move(s));
  }
  return Arithmetic(*this, op, l, r);
}

Result<Value> Interpreter::EvalCompare(const Expr& e) {
  SPARROW_ASSIGN_OR_RETURN(Value l, Eval(*e.args[0]));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(Value r, Eval(*e.args[i + 1]));
    SPARROW_ASSIGN_OR_RETURN(bool holds, CompareOp(e.ops[i], l, r));
    if (!holds) return Value::Bool(false);
    l = std::move(r);
  }
  return Value::Bool(true);
}

Result<Value> Interpreter::EvalSlice(const Expr& e) {
  SPARROW_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
  std::optional<int64_t> bounds[3];
  for (int i = 0; i < 3; ++i) {
    const ExprPtr& b = e.args[static_cast<size_t>(i) + 1];
    if (!b) continue;
    SPARROW_ASSIGN_OR_RETURN(Value v, Eval(*b));
    SPARROW_ASSIGN_OR_RETURN(bounds[i], SliceBound(v));
  }
  int64_t step = bounds[2].value_or(1);
  if (step == 0) return InvalidArgument("slice step cannot be zero");
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_string()) {
    auto cps = CodePoints(obj.as_string());
    std::vector<uint32_t> out;
    for (size_t i : SliceIndices(cps.size(), bounds[0], bounds[1], step)) out.push_back(cps[i]);
    return Value::String(FromCodePoints(out, 0, out.size()));
  }
  if (obj.is_list_like()) {
    const List& src = obj.list();
    std::vector<size_t> picked = SliceIndices(src.size(), bounds[0], bounds[1], step);
    SPARROW_RETURN_IF_ERROR(CheckItems(picked.size()));
    List out;
    out.reserve(picked.size());
    for (size_t i : picked) out.push_back(src[i]);
    return obj.kind() == Value::Kind::kList ? Value::MakeList(std::move(out))
                                            : Value::MakeTuple(std::move(out));
  }
  return InvalidArgument(
      std::string("'").append(obj.TypeName()).append("' object is not subscriptable"));
}

}  // namespace sparrow::jinja
