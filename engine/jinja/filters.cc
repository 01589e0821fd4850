// jinja2's built-in filters, with transformers' tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/jinja/builtins.h"
#include "engine/jinja/filters_sequence.h"
#include "engine/jinja/strings.h"
#include "engine/tokenizer/unicode.h"

namespace sparrow::jinja {
namespace {

using FilterFn = Result<Value> (*)(Interpreter&, const Value&, CallArgs&);
using Args = std::vector<std::optional<Value>>;

bool Flag(const std::optional<Value>& v) {
  return v && v->Truthy();
}

Result<Value> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return Value::Int(static_cast<int64_t>(CodePointLength(v.as_string())));
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return Value::Int(static_cast<int64_t>(v.list().size()));
    case Value::Kind::kDict:
      return Value::Int(static_cast<int64_t>(v.dict().items.size()));
    case Value::Kind::kUndefined:
      return Value::Int(0);
    default:
      return InvalidArgument("object of type '" + v.TypeName() + "' has no len()");
  }
}

// jinja2's environment.getitem for `attribute=` arguments: dots walk into nested items and
// integer parts index lists.
Result<Value> ToJson(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(
      Args a, BindArgs(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}));
  std::string indent;
  bool has_indent = a[1] && !a[1]->is_none();
  if (has_indent) {
    if (a[1]->is_int()) {
      indent.assign(static_cast<size_t>(std::clamp<int64_t>(a[1]->as_int(), 0, 64)), ' ');
    } else if (a[1]->is_string()) {
      indent = a[1]->as_string();
    } else {
      return InvalidArgument("tojson: indent must be an int or a string");
    }
  }
  std::string item_sep = has_indent ? "," : ", ";
  std::string key_sep = ": ";
  if (a[2] && !a[2]->is_none()) {
    if (!a[2]->is_list_like() || a[2]->list().size() != 2 || !a[2]->list()[0].is_string() ||
        !a[2]->list()[1].is_string()) {
      return InvalidArgument("tojson: separators must be a pair of strings");
    }
    item_sep = a[2]->list()[0].as_string();
    key_sep = a[2]->list()[1].as_string();
  }
  SPARROW_ASSIGN_OR_RETURN(std::string s, v.ToJson(has_indent ? &indent : nullptr, item_sep,
                                                   key_sep, Flag(a[3]), Flag(a[0])));
  SPARROW_RETURN_IF_ERROR(in.CheckSize(s.size()));
  return Value::String(std::move(s));
}

Result<Value> Indent(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "indent", {"width", "first", "blank"}));
  std::string pad(4, ' ');
  if (a[0]) {
    if (a[0]->is_string()) {
      pad = a[0]->as_string();
    } else if (a[0]->is_int()) {
      pad.assign(static_cast<size_t>(std::clamp<int64_t>(a[0]->as_int(), 0, 1024)), ' ');
    } else {
      return InvalidArgument("indent: width must be an int or a string");
    }
  }
  if (!v.is_string()) {  // jinja2 appends "\n" to the value itself
    return InvalidArgument("unsupported operand type(s) for +=: '" + v.TypeName() + "' and 'str'");
  }
  std::vector<std::string> lines = SplitLines(v.as_string() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    SPARROW_RETURN_IF_ERROR(in.CheckSize(out.size() + 1 + pad.size() + lines[i].size()));
    if (i > 0) out += "\n";
    if ((i > 0 || Flag(a[1])) && (Flag(a[2]) || !lines[i].empty())) out += pad;
    out += lines[i];
    SPARROW_RETURN_IF_ERROR(in.CheckSize(out.size()));
  }
  return Value::String(std::move(out));
}

// jinja2's title filter: upper-cases the first letter after each run of "-", whitespace or
// an opening bracket, lower-cases the rest.
std::string TitleFilter(const std::string& s) {
  auto cps = CodePoints(s);
  bool start = true;
  std::string out;
  for (uint32_t c : cps) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
               tokenizer::IsUnicodeWhitespace(c) || (c >= 0x1c && c <= 0x1f);
    std::string one = FromCodePoints({c}, 0, 1);
    out += sep ? one : (start ? Upper(one) : Lower(one));
    start = sep;
  }
  return out;
}

Result<Value> ToInt(const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "int", {"default", "base"}));
  Value dflt = a[0] ? *a[0] : Value::Int(0);
  if (v.is_undefined()) return UndefinedError(v);
  if (v.is_int() || v.is_bool()) return Value::Int(v.as_int());
  if (v.kind() == Value::Kind::kFloat) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return dflt;
    return Value::Int(static_cast<int64_t>(d));
  }
  if (!v.is_string()) return dflt;
  std::string s = Strip(v.as_string(), nullptr, true, true);
  std::string digits;
  for (char c : s) {
    if (c != '_') digits.push_back(c);
  }
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(digits.c_str(), &end, 10);
  if (!digits.empty() && *end == '\0' && errno == 0) return Value::Int(i);
  double d = std::strtod(digits.c_str(), &end);
  if (!digits.empty() && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    return Value::Int(static_cast<int64_t>(d));
  }
  return dflt;
}

Result<Value> ToFloat(const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "float", {"default"}));
  Value dflt = a[0] ? *a[0] : Value::Float(0.0);
  if (v.is_undefined()) return UndefinedError(v);
  if (v.is_number()) return Value::Float(v.as_double());
  if (!v.is_string()) return dflt;
  std::string s = Strip(v.as_string(), nullptr, true, true);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') return dflt;
  return Value::Float(d);
}

Result<Value> Round(const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "round", {"precision", "method"}));
  int64_t precision = a[0] && a[0]->is_int() ? a[0]->as_int() : 0;
  std::string method = a[1] ? a[1]->Str() : "common";
  if (!v.is_number()) return InvalidArgument("round: '" + v.TypeName() + "' is not a number");
  double d = v.as_double();
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::Float(std::ceil(d * scale) / scale);
  if (method == "floor") return Value::Float(std::floor(d * scale) / scale);
  if (method != "common") return InvalidArgument("method must be common, ceil or floor");
  if (v.is_int() || v.is_bool()) return Value::Int(v.as_int());  // Python's round(int, n)
  // Python rounds the exact binary value half to even, as printf does.
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)),
                d);
  return Value::Float(std::strtod(buf, nullptr));
}

size_t WordCount(const std::string& s) {
  size_t n = 0;
  bool in_word = false;
  for (uint32_t c : CodePoints(s)) {
    auto f = tokenizer::GetCodepointFlags(c);
    bool word = c == '_' || f.is_letter() || f.is_number() || f.is_mark();
    if (word && !in_word) ++n;
    in_word = word;
  }
  return n;
}

Result<Value> StrFilter(const Value& v, std::string (*f)(std::string_view)) {
  return Value::String(f(v.Str()));
}

const std::unordered_map<std::string_view, FilterFn>& Filters() {
  static const auto* filters = new std::unordered_map<std::string_view, FilterFn>{
      {"length", [](Interpreter&, const Value& v, CallArgs&) { return Length(v); }},
      {"count", [](Interpreter&, const Value& v, CallArgs&) { return Length(v); }},
      {"default",
       [](Interpreter&, const Value& v, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "default", {"default_value", "boolean"}));
         bool use = v.is_undefined() || (Flag(a[1]) && !v.Truthy());
         if (!use) return v;
         return a[0] ? *a[0] : Value::String("");
       }},
      {"tojson", ToJson},
      {"trim",
       [](Interpreter&, const Value& v, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "trim", {"chars"}));
         std::string chars = a[0] && !a[0]->is_none() ? a[0]->Str() : "";
         return Value::String(
             Strip(v.Str(), a[0] && !a[0]->is_none() ? &chars : nullptr, true, true));
       }},
      {"upper", [](Interpreter&, const Value& v, CallArgs&) { return StrFilter(v, Upper); }},
      {"lower", [](Interpreter&, const Value& v, CallArgs&) { return StrFilter(v, Lower); }},
      {"capitalize",
       [](Interpreter&, const Value& v, CallArgs&) { return StrFilter(v, Capitalize); }},
      {"title",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         return Value::String(TitleFilter(v.Str()));
       }},
      {"string",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         return v.is_string() ? v : Value::String(v.Str());
       }},
      {"safe",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         return Value::Markup(v.Str());
       }},
      {"escape",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         return v.is_markup() ? v : Value::Markup(EscapeHtml(v.Str()));
       }},
      {"first", [](Interpreter& in, const Value& v, CallArgs&) { return First(in, v, false); }},
      {"last", [](Interpreter& in, const Value& v, CallArgs&) { return First(in, v, true); }},
      {"join", Join},
      {"list",
       [](Interpreter& in, const Value& v, CallArgs&) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
         return Value::MakeList(std::move(items));
       }},
      {"items",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         if (v.is_undefined()) return Value::MakeGenerator({});
         if (!v.is_dict()) return InvalidArgument("Can only get item pairs from a mapping.");
         List out;
         for (const auto& [k, e] : v.dict().items) out.push_back(Value::MakeTuple({k, e}));
         return Value::MakeGenerator(std::move(out));
       }},
      {"int", [](Interpreter&, const Value& v, CallArgs& a) { return ToInt(v, a); }},
      {"float", [](Interpreter&, const Value& v, CallArgs& a) { return ToFloat(v, a); }},
      {"abs",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         if (v.kind() == Value::Kind::kFloat) return Value::Float(std::fabs(v.as_double()));
         if (!v.is_number())
           return InvalidArgument("bad operand type for abs(): '" + v.TypeName() + "'");
         if (v.as_int() == INT64_MIN) return OutOfRange("integer overflow");
         return Value::Int(std::abs(v.as_int()));
       }},
      {"round", [](Interpreter&, const Value& v, CallArgs& a) { return Round(v, a); }},
      {"replace",
       [](Interpreter& in, const Value& v, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "replace", {"old", "new", "count"}));
         if (!a[0] || !a[1]) return InvalidArgument("replace needs old and new");
         int64_t count = a[2] && a[2]->is_int() ? a[2]->as_int() : -1;
         std::string r = Replace(v.Str(), a[0]->Str(), a[1]->Str(), count);
         SPARROW_RETURN_IF_ERROR(in.CheckSize(r.size()));
         return Value::String(std::move(r));
       }},
      {"reverse",
       [](Interpreter& in, const Value& v, CallArgs&) -> Result<Value> {
         if (v.is_string()) {
           auto cps = CodePoints(v.as_string());
           std::reverse(cps.begin(), cps.end());
           return Value::String(FromCodePoints(cps, 0, cps.size()));
         }
         SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
         std::reverse(items.begin(), items.end());
         return Value::MakeGenerator(std::move(items));
       }},
      {"unique", Unique},
      {"map", Map},
      {"select",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, false); }},
      {"reject",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, false); }},
      {"selectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, true, true); }},
      {"rejectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return Select(in, v, a, false, true); }},
      {"sort", Sort},
      {"dictsort", DictSort},
      {"min", [](Interpreter& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, false); }},
      {"max", [](Interpreter& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, true); }},
      {"sum",
       [](Interpreter& in, const Value& v, CallArgs& args) -> Result<Value> {
         SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "sum", {"attribute", "start"}));
         SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
         Value total = a[1] ? *a[1] : Value::Int(0);
         for (const Value& item : items) {
           Value x = item;
           if (a[0] && !a[0]->is_none()) {
             SPARROW_ASSIGN_OR_RETURN(x, AttributeOf(in, item, a[0]->Str()));
           }
           if (!x.is_number() || !total.is_number())
             return InvalidArgument("sum: items must be numbers");
           total = (x.kind() == Value::Kind::kFloat || total.kind() == Value::Kind::kFloat)
                       ? Value::Float(total.as_double() + x.as_double())
                       : Value::Int(total.as_int() + x.as_int());
         }
         return total;
       }},
      {"indent", Indent},
      {"format",
       [](Interpreter& in, const Value& v, CallArgs& args) -> Result<Value> {
         // jinja2: value % (kwargs or args)
         Value params;
         if (!args.keyword.empty()) {
           Dict d;
           for (auto& [k, x] : args.keyword) d.Set(k, x);
           params = Value::MakeDict(std::move(d));
         } else {
           params = Value::MakeTuple(args.positional);
         }
         SPARROW_ASSIGN_OR_RETURN(std::string s, PercentFormat(v.Str(), params));
         SPARROW_RETURN_IF_ERROR(in.CheckSize(s.size()));
         return Value::String(std::move(s));
       }},
      {"batch", Batch},
      {"wordcount",
       [](Interpreter&, const Value& v, CallArgs&) -> Result<Value> {
         return Value::Int(static_cast<int64_t>(WordCount(v.Str())));
       }},
  };
  return *filters;
}

const std::unordered_map<std::string_view, std::string_view>& Aliases() {
  static const auto* aliases =
      new std::unordered_map<std::string_view, std::string_view>{{"d", "default"}, {"e", "escape"}};
  return *aliases;
}

std::string_view Canonical(std::string_view name) {
  auto it = Aliases().find(name);
  return it == Aliases().end() ? name : it->second;
}

}  // namespace

bool IsFilter(std::string_view name) {
  return Filters().count(Canonical(name)) != 0;
}

Result<Value> ApplyFilter(Interpreter& in, std::string_view name, const Value& subject,
                          CallArgs& args) {
  auto it = Filters().find(Canonical(name));
  if (it == Filters().end())
    return Unsupported("filter '" + std::string(name) + "' is not supported");
  SPARROW_RETURN_IF_ERROR(in.Tick());
  return it->second(in, subject, args);
}

}  // namespace sparrow::jinja
