#pragma once
// Value: what a Jinja expression evaluates to, with Python's semantics for the types chat
// templates see (None, bool, int, float, str, list, tuple, dict, jinja2's Undefined, namespace,
// generators from filters such as map, and callables). Lists and dicts are shared by reference,
// as in Python; strings are immutable and shared too, so copying any Value is O(1). Values made
// during a render are charged to its RenderBudget (budget.h) until their last copy goes.
// Thread-compatible.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/common/result.h"

namespace sparrow::jinja {

class Value;
class Interpreter;

using List = std::vector<Value>;

// A Python dict in insertion order. Keys are strings but for dict literals with numbers.
struct Dict {
  std::vector<std::pair<Value, Value>> items;

  const Value* Find(std::string_view key) const;
  const Value* Find(const Value& key) const;
  void Set(Value key, Value value);
  void Set(std::string key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// A built-in function, a bound method or a macro.
struct Callable {
  std::string name;
  std::function<Result<Value>(Interpreter&, CallArgs&)> fn;
};

// A one-shot iterator (what jinja2's map, select, unique... return): iterating it twice yields
// nothing the second time, it is always true, has no len() and is not JSON serializable.
struct Generator {
  List items;
  bool consumed = false;
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kNamespace,
    kGenerator,
    kCallable
  };

  Value() = default;  // undefined
  static Value Undefined(std::string hint = "") { return Value(Kind::kUndefined, std::move(hint)); }
  static Value None() { return Value(Kind::kNone, std::monostate{}); }
  static Value Bool(bool b) { return Value(Kind::kBool, b); }
  static Value Int(int64_t i) { return Value(Kind::kInt, i); }
  static Value Float(double d) { return Value(Kind::kFloat, d); }
  static Value String(std::string s);
  // A string marked safe (jinja2's Markup, from the safe and escape filters): `+` with a plain
  // string escapes the plain one.
  static Value Markup(std::string s) {
    Value v = String(std::move(s));
    v.markup_ = true;
    return v;
  }
  static Value MakeList(List items = {});
  static Value MakeTuple(List items);
  static Value MakeDict(Dict d = {});
  static Value MakeNamespace(Dict d = {});
  static Value MakeGenerator(List items);
  static Value MakeCallable(std::string name,
                            std::function<Result<Value>(Interpreter&, CallArgs&)> fn);
  // JSON to Value: objects keep the order they have in `j`.
  static Value FromJson(const nlohmann::json& j);
  static Value FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return markup_; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || is_bool(); }
  bool is_list_like() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_mapping() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }
  double as_double() const;
  const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  // For undefined: the name or expression it came from, for error messages.
  const std::string& undefined_hint() const { return std::get<std::string>(v_); }
  List& list() const { return *std::get<std::shared_ptr<List>>(v_); }
  Dict& dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  Generator& generator() const { return *std::get<std::shared_ptr<Generator>>(v_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(v_); }
  // Identity of a list, dict or namespace (Python's `is`); null for other kinds.
  const void* identity() const;

  // Python's bool(x).
  bool Truthy() const;
  // Python's type name ("str", "dict", "NoneType"...), for error messages.
  std::string TypeName() const;
  // Python's str(x) (undefined is ""). repr() is Repr().
  std::string Str() const;
  std::string Repr() const;
  // json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...); `indent`
  // empty means none. Fails on what Python cannot serialize.
  Result<std::string> ToJson(const std::string* indent, std::string_view item_sep,
                             std::string_view key_sep, bool sort_keys,
                             bool ensure_ascii = false) const;

  // Python ==.
  bool Equals(const Value& other) const;

 private:
  using Storage =
      std::variant<std::monostate, bool, int64_t, double, std::string,
                   std::shared_ptr<const std::string>, std::shared_ptr<List>, std::shared_ptr<Dict>,
                   std::shared_ptr<Generator>, std::shared_ptr<Callable>>;
  template <typename T>
  Value(Kind kind, T v) : kind_(kind), v_(std::move(v)) {}

  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  Storage v_ = std::string();  // undefined's hint; a str is the shared alternative
};

// Counts the nesting of the recursive walks over values (==, <) on this thread: templates can
// build lists nested as deep as their step limit allows.
class NestingGuard {
 public:
  static constexpr int kMaxDepth = 512;
  NestingGuard() { ++depth(); }
  ~NestingGuard() { --depth(); }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  bool too_deep() const { return depth() > kMaxDepth; }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

// Python's repr of a float ("1.0", "0.1", "1e+16", "inf", "nan").
std::string FormatFloat(double d);
// Python's repr of a str.
std::string ReprString(std::string_view s);
// markupsafe's escape: & < > " ' as HTML entities.
std::string EscapeHtml(std::string_view s);

}  // namespace sparrow::jinja
