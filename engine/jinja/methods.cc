// The methods of str, dict and list that templates call, as bound callables.
#include <cctype>
#include <cstdio>
#include <cstring>

#include "engine/jinja/budget.h"
#include "engine/jinja/builtins.h"
#include "engine/jinja/strings.h"

namespace sparrow::jinja {
namespace {

using MethodFn = Result<Value> (*)(Interpreter&, const Value&, CallArgs&);

Result<const std::string*> OptString(const std::optional<Value>& v, std::string_view what) {
  if (!v || v->is_none()) return static_cast<const std::string*>(nullptr);
  if (!v->is_string()) return InvalidArgument(std::string(what) + " arg must be None or str");
  return &v->as_string();
}

Result<Value> StripMethod(const Value& self, CallArgs& args, std::string_view fn, bool l, bool r) {
  SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, fn, {"chars"}));
  SPARROW_ASSIGN_OR_RETURN(const std::string* chars, OptString(a[0], fn));
  return Value::String(Strip(self.as_string(), chars, l, r));
}

Result<Value> AffixMethod(const Value& self, CallArgs& args, bool prefix) {
  SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, prefix ? "startswith" : "endswith", {"affix"}));
  if (!a[0]) return InvalidArgument("startswith/endswith need an argument");
  std::vector<std::string> affixes;
  if (a[0]->is_string()) {
    affixes.push_back(a[0]->as_string());
  } else if (a[0]->kind() == Value::Kind::kTuple) {
    for (const Value& v : a[0]->list()) {
      if (!v.is_string()) return InvalidArgument("startswith/endswith: tuple items must be str");
      affixes.push_back(v.as_string());
    }
  } else {
    return InvalidArgument("startswith/endswith first arg must be str or a tuple of str, not " +
                           a[0]->TypeName());
  }
  const std::string& s = self.as_string();
  for (const std::string& x : affixes) {
    if (x.size() > s.size()) continue;
    if (prefix ? s.compare(0, x.size(), x) == 0
               : s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

Result<Value> SplitMethod(const Value& self, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "split", {"sep", "maxsplit"}));
  SPARROW_ASSIGN_OR_RETURN(const std::string* sep, OptString(a[0], "split"));
  if (sep && sep->empty()) return InvalidArgument("empty separator");
  int64_t maxsplit = a[1] && a[1]->is_int() ? a[1]->as_int() : -1;
  List out;
  for (auto& part : Split(self.as_string(), sep, maxsplit)) out.push_back(Value::String(part));
  return Value::MakeList(std::move(out));
}

// str.format with automatic, numbered and named fields; format specs are not supported.
Result<Value> FormatMethod(const Value& self, CallArgs& args) {
  const std::string& f = self.as_string();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') ++i;
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    size_t end = f.find('}', i);
    if (end == std::string::npos) return InvalidArgument("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, end - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      return Unsupported("str.format field '{" + field + "}' is not supported");
    }
    const Value* v = nullptr;
    if (field.empty() || (field.find_first_not_of("0123456789") == std::string::npos)) {
      size_t idx = field.empty() ? auto_index++ : std::stoul(field);
      if (idx >= args.positional.size()) {
        return InvalidArgument("Replacement index " + std::to_string(idx) +
                               " out of range for positional args tuple");
      }
      v = &args.positional[idx];
    } else {
      for (const auto& [k, x] : args.keyword) {
        if (k == field) v = &x;
      }
      if (!v) return InvalidArgument("KeyError: '" + field + "'");
    }
    std::string text = v->Str();
    if (!RoomForString(out.size() + text.size())) return BytesExhausted();
    out += text;
    i = end;
  }
  return Value::String(std::move(out));
}

}  // namespace

Result<std::string> PercentFormat(const std::string& f, const Value& args) {
  const bool by_name = args.is_dict();
  List positional;
  if (args.kind() == Value::Kind::kTuple) {
    positional = args.list();
  } else if (!by_name) {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) return InvalidArgument("incomplete format");
    const Value* v = nullptr;
    if (f[i] == '(') {
      size_t close = f.find(')', i);
      if (!by_name) return InvalidArgument("format requires a mapping");
      if (close == std::string::npos) return InvalidArgument("incomplete format key");
      v = args.dict().Find(std::string_view(f).substr(i + 1, close - i - 1));
      if (!v) return InvalidArgument("KeyError: '" + f.substr(i + 1, close - i - 1) + "'");
      i = close + 1;
    }
    std::string flags;
    while (i < f.size() && std::strchr("-0 +#", f[i])) flags.push_back(f[i++]);
    int width = 0;
    int precision = -1;
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) && width < 1000) {
      width = width * 10 + (f[i++] - '0');
    }
    if (i < f.size() && f[i] == '.') {
      precision = 0;
      while (++i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) && precision < 1000) {
        precision = precision * 10 + (f[i] - '0');
      }
    }
    if (width > 200 || precision > 100)
      return Unsupported("format widths over 200 are not supported");
    if (i >= f.size()) return InvalidArgument("incomplete format");
    std::string spec = "%" + flags + (width ? std::to_string(width) : "") +
                       (precision >= 0 ? std::string(".").append(std::to_string(precision)) : "");
    char conv = f[i];
    if (conv == '%' && spec == "%" && !v) {
      out.push_back('%');
      continue;
    }
    if (!v) {
      if (by_name) return InvalidArgument("format requires a mapping");
      if (next >= positional.size()) {
        return InvalidArgument("not enough arguments for format string");
      }
      v = &positional[next++];
    }
    char buf[512];
    const size_t pad_room = static_cast<size_t>(width);
    if (conv == 's' || conv == 'r') {
      // Counted in code points, as Python pads and cuts.
      const std::string text = conv == 's' ? v->Str() : v->Repr();
      if (!RoomForString(out.size() + text.size() + pad_room)) return BytesExhausted();
      std::vector<uint32_t> cps = CodePoints(text);
      if (precision >= 0 && cps.size() > static_cast<size_t>(precision)) cps.resize(precision);
      std::string pad(cps.size() < static_cast<size_t>(width) ? width - cps.size() : 0, ' ');
      bool left = flags.find('-') != std::string::npos;
      out += (left ? "" : pad) + FromCodePoints(cps, 0, cps.size()) + (left ? pad : "");
    } else if (conv == 'd' || conv == 'i' || conv == 'f') {
      if (!v->is_number()) {
        return InvalidArgument(std::string("%") + conv +
                               " format: a real number is required, not " + v->TypeName());
      }
      if (conv == 'f') {
        std::snprintf(buf, sizeof(buf), (spec + "f").c_str(), v->as_double());
      } else {
        long long n = v->kind() == Value::Kind::kFloat ? static_cast<long long>(v->as_double())
                                                       : static_cast<long long>(v->as_int());
        std::snprintf(buf, sizeof(buf), (spec + "lld").c_str(), n);
      }
      out += buf;
    } else {
      return Unsupported(std::string("the %") + conv + " conversion is not supported");
    }
  }
  if (!by_name && next < positional.size()) {
    return InvalidArgument("not all arguments converted during string formatting");
  }
  return out;
}

namespace {

const std::unordered_map<std::string_view, MethodFn>& StringMethods() {
  static const auto* m = new std::unordered_map<std::string_view, MethodFn>{
      {"strip", [](Interpreter&, const Value& s,
                   CallArgs& a) { return StripMethod(s, a, "strip", true, true); }},
      {"lstrip", [](Interpreter&, const Value& s,
                    CallArgs& a) { return StripMethod(s, a, "lstrip", true, false); }},
      {"rstrip", [](Interpreter&, const Value& s,
                    CallArgs& a) { return StripMethod(s, a, "rstrip", false, true); }},
      {"startswith",
       [](Interpreter&, const Value& s, CallArgs& a) { return AffixMethod(s, a, true); }},
      {"endswith",
       [](Interpreter&, const Value& s, CallArgs& a) { return AffixMethod(s, a, false); }},
      {"split", [](Interpreter&, const Value& s, CallArgs& a) { return SplitMethod(s, a); }},
      {"splitlines",
       [](Interpreter&, const Value& s, CallArgs&) -> Result<Value> {
         List out;
         for (auto& line : SplitLines(s.as_string())) out.push_back(Value::String(line));
         return Value::MakeList(std::move(out));
       }},
      {"upper",
       [](Interpreter&, const Value& s, CallArgs&) -> Result<Value> {
         return Value::String(Upper(s.as_string()));
       }},
      {"lower",
       [](Interpreter&, const Value& s, CallArgs&) -> Result<Value> {
         return Value::String(Lower(s.as_string()));
       }},
      {"title",
       [](Interpreter&, const Value& s, CallArgs&) -> Result<Value> {
         return Value::String(TitleMethod(s.as_string()));
       }},
      {"capitalize",
       [](Interpreter&, const Value& s, CallArgs&) -> Result<Value> {
         return Value::String(Capitalize(s.as_string()));
       }},
      {"replace",
       [](Interpreter& in, const Value& s, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "replace", {"old", "new", "count"}));
         if (!a[0] || !a[1] || !a[0]->is_string() || !a[1]->is_string()) {
           return InvalidArgument("replace() takes two strings");
         }
         int64_t count = a[2] && a[2]->is_int() ? a[2]->as_int() : -1;
         std::string r = Replace(s.as_string(), a[0]->as_string(), a[1]->as_string(), count);
         SPARROW_RETURN_IF_ERROR(in.CheckSize(r.size()));
         return Value::String(std::move(r));
       }},
      {"find",
       [](Interpreter&, const Value& s, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "find", {"sub"}));
         if (!a[0] || !a[0]->is_string()) return InvalidArgument("find() takes a string");
         return Value::Int(Find(s.as_string(), a[0]->as_string()));
       }},
      {"count",
       [](Interpreter&, const Value& s, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "count", {"sub"}));
         if (!a[0] || !a[0]->is_string()) return InvalidArgument("count() takes a string");
         const std::string& sub = a[0]->as_string();
         if (sub.empty())
           return Value::Int(static_cast<int64_t>(CodePointLength(s.as_string())) + 1);
         int64_t n = 0;
         for (size_t at = s.as_string().find(sub); at != std::string::npos;
              at = s.as_string().find(sub, at + sub.size())) {
           ++n;
         }
         return Value::Int(n);
       }},
      {"join",
       [](Interpreter& in, const Value& s, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "join", {"iterable"}));
         if (!a[0]) return InvalidArgument("join() takes an iterable");
         SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(*a[0]));
         std::string out;
         for (size_t i = 0; i < items.size(); ++i) {
           if (!items[i].is_string()) {
             return InvalidArgument("sequence item " + std::to_string(i) +
                                    ": expected str instance, " + items[i].TypeName() + " found");
           }
           SPARROW_RETURN_IF_ERROR(
               in.CheckSize(out.size() + s.as_string().size() + items[i].as_string().size()));
           if (i > 0) out += s.as_string();
           out += items[i].as_string();
         }
         return Value::String(std::move(out));
       }},
      {"format", [](Interpreter&, const Value& s, CallArgs& a) { return FormatMethod(s, a); }},
  };
  return *m;
}

Result<Value> DictItems(const Value& d, int which) {
  List out;
  for (const auto& [k, v] : d.dict().items) {
    if (which == 0) out.push_back(Value::MakeTuple({k, v}));
    if (which == 1) out.push_back(k);
    if (which == 2) out.push_back(v);
  }
  return Value::MakeList(std::move(out));
}

const std::unordered_map<std::string_view, MethodFn>& DictMethods() {
  static const auto* m = new std::unordered_map<std::string_view, MethodFn>{
      {"items", [](Interpreter&, const Value& d, CallArgs&) { return DictItems(d, 0); }},
      {"keys", [](Interpreter&, const Value& d, CallArgs&) { return DictItems(d, 1); }},
      {"values", [](Interpreter&, const Value& d, CallArgs&) { return DictItems(d, 2); }},
      {"get",
       [](Interpreter&, const Value& d, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(auto a, BindArgs(args, "get", {"key", "default"}));
         if (!a[0]) return InvalidArgument("get expected at least 1 argument, got 0");
         if (const Value* v = d.dict().Find(*a[0])) return *v;
         return a[1] ? *a[1] : Value::None();
       }},
      {"copy",
       [](Interpreter&, const Value& d, CallArgs&) -> Result<Value> {
         return Value::MakeDict(d.dict());
       }},
  };
  return *m;
}

bool Mutates(const Value& obj, std::string_view name) {
  static constexpr std::string_view kDict[] = {"clear", "pop", "popitem", "setdefault", "update"};
  static constexpr std::string_view kList[] = {"append", "clear", "pop",    "reverse",
                                               "insert", "sort",  "extend", "remove"};
  if (obj.is_dict()) {
    for (auto n : kDict) {
      if (n == name) return true;
    }
  }
  if (obj.kind() == Value::Kind::kList) {
    for (auto n : kList) {
      if (n == name) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<Value> GetMethod(const Value& obj, std::string_view name) {
  // transformers renders in jinja2's ImmutableSandboxedEnvironment, which refuses the methods
  // that modify a list or dict: the attribute is an undefined that fails when called.
  if (Mutates(obj, name)) {
    return Value::Undefined("access to attribute '" + std::string(name) + "' of '" +
                            obj.TypeName() + "' object is unsafe.");
  }
  const std::unordered_map<std::string_view, MethodFn>* table = nullptr;
  if (obj.is_string()) table = &StringMethods();
  if (obj.is_dict()) table = &DictMethods();
  if (!table) return std::nullopt;
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  MethodFn fn = it->second;
  Value self = obj;
  return Value::MakeCallable(std::string(name),
                             [fn, self](Interpreter& in, CallArgs& a) { return fn(in, self, a); });
}

}  // namespace sparrow::jinja
