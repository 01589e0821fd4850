// Argument binding, comparisons, jinja2's tests and the globals.
#include <cmath>
#include <cstdio>
#include <ctime>

#include "engine/jinja/budget.h"
#include "engine/jinja/builtins.h"
#include "engine/jinja/strings.h"

namespace sparrow::jinja {

Result<std::vector<std::optional<Value>>> BindArgs(CallArgs& args, std::string_view fn,
                                                   std::initializer_list<std::string_view> names) {
  std::vector<std::optional<Value>> out(names.size());
  if (args.positional.size() > names.size()) {
    return InvalidArgument(std::string(fn) + "() takes at most " + std::to_string(names.size()) +
                           " argument(s), " + std::to_string(args.positional.size()) + " given");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (auto& [key, v] : args.keyword) {
    size_t i = 0;
    for (std::string_view n : names) {
      if (n == key) break;
      ++i;
    }
    if (i == names.size()) {
      return InvalidArgument(std::string(fn) + "() got an unexpected keyword argument '" + key +
                             "'");
    }
    out[i] = v;
  }
  return out;
}

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  return v.TypeName() + " object";
}

Status UndefinedError(const Value& undefined) {
  const std::string& hint = undefined.undefined_hint();
  return InvalidArgument(hint.empty() ? "an undefined value was used" : hint);
}

Result<bool> Less(const Value& a, const Value& b) {
  const NestingGuard nesting;
  if (nesting.too_deep()) {
    return InvalidArgument("'<' between lists nested deeper than " +
                           std::to_string(NestingGuard::kMaxDepth) + " levels");
  }
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat) {
      return a.as_double() < b.as_double();
    }
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) {
    NoteScanned(std::min(a.as_string().size(), b.as_string().size()));
    return a.as_string() < b.as_string();
  }
  if (a.is_list_like() && a.kind() == b.kind()) {
    const List& x = a.list();
    const List& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].Equals(y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  return InvalidArgument("'<' not supported between instances of '" + a.TypeName() + "' and '" +
                         b.TypeName() + "'");
}

Result<bool> Contains(const Value& container, const Value& x) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!x.is_string()) {
        return InvalidArgument("'in <string>' requires string as left operand, not " +
                               x.TypeName());
      }
      NoteScanned(container.as_string().size());
      return container.as_string().find(x.as_string()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      NoteScanned(container.list().size() * 16);
      for (const Value& e : container.list()) {
        if (e.Equals(x)) return true;
      }
      return false;
    case Value::Kind::kGenerator:
      for (const Value& e : container.generator().items) {
        if (e.Equals(x)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (x.is_list_like() || x.is_mapping()) {
        return InvalidArgument("unhashable type: '" + x.TypeName() + "'");
      }
      return container.dict().Find(x) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      return InvalidArgument("argument of type '" + container.TypeName() + "' is not iterable");
  }
}

namespace {

using TestFn = Result<bool> (*)(const Value&, const std::vector<Value>&);

Result<bool> NeedArg(const std::vector<Value>& args) {
  if (args.empty()) return InvalidArgument("the test needs an argument");
  return true;
}

Result<int64_t> IntOperand(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.kind() == Value::Kind::kFloat && std::floor(v.as_double()) == v.as_double()) {
    return static_cast<int64_t>(v.as_double());
  }
  if (v.is_undefined()) return UndefinedError(v);
  return InvalidArgument("unsupported operand type(s) for %: '" + v.TypeName() + "' and 'int'");
}

// Python's value % 2, which odd and even compare with 1 and 0 (floats included).
Result<double> ModTwo(const Value& v) {
  if (v.kind() == Value::Kind::kFloat) {
    double m = std::fmod(v.as_double(), 2.0);
    return m < 0 ? m + 2.0 : m;
  }
  SPARROW_ASSIGN_OR_RETURN(int64_t i, IntOperand(v));
  return static_cast<double>(((i % 2) + 2) % 2);
}

bool SameAs(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kNone:
    case Value::Kind::kUndefined:
      return true;
    case Value::Kind::kBool:
      return a.as_bool() == b.as_bool();
    // CPython caches the small ints, so `is` holds for equal ones in that range.
    case Value::Kind::kInt:
      return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    default:
      return a.identity() == b.identity();
  }
}

Result<bool> Compare(const Value& v, const std::vector<Value>& args, const char* op) {
  SPARROW_RETURN_IF_ERROR(NeedArg(args).status());
  std::string o(op);
  if (o == "==") return v.Equals(args[0]);
  if (o == "!=") return !v.Equals(args[0]);
  if (o == "<") return Less(v, args[0]);
  if (o == ">") return Less(args[0], v);
  SPARROW_ASSIGN_OR_RETURN(bool less, Less(o == "<=" ? args[0] : v, o == "<=" ? v : args[0]));
  return !less;
}

const std::unordered_map<std::string_view, TestFn>& Tests() {
  static const auto* tests = new std::unordered_map<std::string_view, TestFn>{
      {"defined", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return !v.is_undefined();
       }},
      {"undefined", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_undefined();
       }},
      {"none", [](const Value& v, const std::vector<Value>&) -> Result<bool> { return v.is_none(); }},
      {"string", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_string();
       }},
      {"mapping", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_dict();
       }},
      {"iterable", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_string() || v.is_list_like() || v.is_dict() || v.is_undefined() ||
                v.kind() == Value::Kind::kGenerator;
       }},
      {"sequence", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_string() || v.is_list_like() || v.is_dict() || v.is_undefined();
       }},
      {"number", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_number();
       }},
      {"integer", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_int();
       }},
      {"float", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.kind() == Value::Kind::kFloat;
       }},
      {"boolean", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_bool();
       }},
      {"true", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_bool() && v.as_bool();
       }},
      {"false", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_bool() && !v.as_bool();
       }},
      {"callable", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_callable();
       }},
      {"lower", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return IsLower(v.Str());
       }},
      {"upper", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return IsUpper(v.Str());
       }},
      {"escaped", [](const Value&, const std::vector<Value>&) -> Result<bool> { return false; }},
      {"odd", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         SPARROW_ASSIGN_OR_RETURN(double m, ModTwo(v));
         return m == 1;
       }},
      {"even", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         SPARROW_ASSIGN_OR_RETURN(double m, ModTwo(v));
         return m == 0;
       }},
      {"divisibleby", [](const Value& v, const std::vector<Value>& a) -> Result<bool> {
         SPARROW_RETURN_IF_ERROR(NeedArg(a).status());
         SPARROW_ASSIGN_OR_RETURN(int64_t i, IntOperand(v));
         SPARROW_ASSIGN_OR_RETURN(int64_t d, IntOperand(a[0]));
         if (d == 0) return InvalidArgument("integer division or modulo by zero");
         return i % d == 0;
       }},
      {"sameas", [](const Value& v, const std::vector<Value>& a) -> Result<bool> {
         SPARROW_RETURN_IF_ERROR(NeedArg(a).status());
         return SameAs(v, a[0]);
       }},
      {"in", [](const Value& v, const std::vector<Value>& a) -> Result<bool> {
         SPARROW_RETURN_IF_ERROR(NeedArg(a).status());
         return Contains(a[0], v);
       }},
      {"filter", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_string() && IsFilter(v.as_string());
       }},
      {"test", [](const Value& v, const std::vector<Value>&) -> Result<bool> {
         return v.is_string() && IsTest(v.as_string());
       }},
#define SPARROW_JINJA_COMPARE(name, op)                                     \
  {                                                                         \
    name, [](const Value& v, const std::vector<Value>& a) -> Result<bool> { \
      return Compare(v, a, op);                                             \
    }                                                                       \
  }
      SPARROW_JINJA_COMPARE("==", "=="), SPARROW_JINJA_COMPARE("eq", "=="),
      SPARROW_JINJA_COMPARE("equalto", "=="), SPARROW_JINJA_COMPARE("!=", "!="),
      SPARROW_JINJA_COMPARE("ne", "!="), SPARROW_JINJA_COMPARE("<", "<"),
      SPARROW_JINJA_COMPARE("lt", "<"), SPARROW_JINJA_COMPARE("lessthan", "<"),
      SPARROW_JINJA_COMPARE("<=", "<="), SPARROW_JINJA_COMPARE("le", "<="),
      SPARROW_JINJA_COMPARE(">", ">"), SPARROW_JINJA_COMPARE("gt", ">"),
      SPARROW_JINJA_COMPARE("greaterthan", ">"), SPARROW_JINJA_COMPARE(">=", ">="),
      SPARROW_JINJA_COMPARE("ge", ">="),
#undef SPARROW_JINJA_COMPARE
  };
  return *tests;
}

Result<Value> Range(Interpreter& in, CallArgs& args) {
  if (!args.keyword.empty()) return InvalidArgument("range() takes no keyword arguments");
  std::vector<int64_t> a;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) {
      return InvalidArgument(std::string("'")
                                 .append(v.TypeName())
                                 .append("' object cannot be interpreted as an integer"));
    }
    a.push_back(v.as_int());
  }
  if (a.empty() || a.size() > 3) return InvalidArgument("range expected 1 to 3 arguments");
  int64_t start = a.size() == 1 ? 0 : a[0];
  int64_t stop = a.size() == 1 ? a[0] : a[1];
  int64_t step = a.size() == 3 ? a[2] : 1;
  if (step == 0) return InvalidArgument("range() arg 3 must not be zero");
  // jinja2's sandbox refuses ranges over MAX_RANGE items.
  constexpr int64_t kMaxRange = 100000;
  double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                           static_cast<double>(step));
  if (count > kMaxRange) {
    return ResourceExhausted(
        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::Int(i));
  SPARROW_RETURN_IF_ERROR(in.Tick(static_cast<int64_t>(out.size())));
  return Value::MakeList(std::move(out));
}

// dict(mapping, **kwargs), which namespace() takes too.
Result<Dict> DictFromArgs(CallArgs& args, std::string_view fn) {
  Dict d;
  if (args.positional.size() > 1) {
    return InvalidArgument(std::string(fn) + "() takes at most 1 positional argument");
  }
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_mapping()) {
      d = src.dict();
    } else if (src.is_list_like()) {
      for (const Value& pair : src.list()) {
        if (!pair.is_list_like() || pair.list().size() != 2 || !pair.list()[0].is_string()) {
          return InvalidArgument(std::string(fn) + "(): expected (string key, value) pairs");
        }
        d.Set(pair.list()[0].as_string(), pair.list()[1]);
      }
    } else {
      return InvalidArgument(std::string(fn) + "(): '" + src.TypeName() +
                             "' object is not a mapping");
    }
  }
  for (auto& [k, v] : args.keyword) d.Set(k, v);
  return d;
}

// transformers' strftime_now reads the clock; Sparrow takes `sparrow_now` ("YYYY-MM-DD" or
// "YYYY-MM-DDTHH:MM:SS") from the context when it is there, so renders can be reproduced.
Result<Value> StrftimeNow(Interpreter& in, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "strftime_now", {"format"}));
  if (!a[0] || !a[0]->is_string()) return InvalidArgument("strftime_now() needs a format string");
  std::tm tm{};
  const Value* fixed = in.ContextVar("sparrow_now");
  if (fixed && fixed->is_string()) {
    int n = std::sscanf(fixed->as_string().c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon,
                        &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
    if (n < 3) return InvalidArgument("sparrow_now is not a date: " + fixed->as_string());
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    std::tm copy = tm;
    timegm(&copy);  // fills in the weekday and day of the year
    tm.tm_wday = copy.tm_wday;
    tm.tm_yday = copy.tm_yday;
  } else {
    std::time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
  }
  const std::string& fmt = a[0]->as_string();
  if (fmt.empty()) return Value::String("");
  std::string buf(fmt.size() * 8 + 64, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  buf.resize(n);
  return Value::String(std::move(buf));
}

}  // namespace

bool IsTest(std::string_view name) {
  return Tests().count(name) != 0;
}

Result<bool> ApplyTest(Interpreter&, std::string_view name, const Value& subject, CallArgs& args) {
  auto it = Tests().find(name);
  if (it == Tests().end()) return Unsupported("test '" + std::string(name) + "' is not supported");
  if (!args.keyword.empty()) return InvalidArgument("tests take no keyword arguments");
  return it->second(subject, args.positional);
}

std::unordered_map<std::string, Value> MakeGlobals() {
  std::unordered_map<std::string, Value> g;
  g["range"] = Value::MakeCallable("range", Range);
  g["dict"] = Value::MakeCallable("dict", [](Interpreter&, CallArgs& a) -> Result<Value> {
    SPARROW_ASSIGN_OR_RETURN(Dict d, DictFromArgs(a, "dict"));
    return Value::MakeDict(std::move(d));
  });
  g["namespace"] =
      Value::MakeCallable("namespace", [](Interpreter& in, CallArgs& a) -> Result<Value> {
        SPARROW_ASSIGN_OR_RETURN(Dict d, DictFromArgs(a, "namespace"));
        Value ns = Value::MakeNamespace(std::move(d));
        in.TrackNamespace(ns);
        return ns;
      });
  g["raise_exception"] =
      Value::MakeCallable("raise_exception", [](Interpreter&, CallArgs& a) -> Result<Value> {
        std::string msg = a.positional.empty() ? "" : a.positional[0].Str();
        return InvalidArgument("raise_exception: " + msg);
      });
  g["strftime_now"] = Value::MakeCallable("strftime_now", StrftimeNow);
  return g;
}

}  // namespace sparrow::jinja
