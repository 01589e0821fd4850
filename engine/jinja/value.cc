#include "engine/jinja/value.h"

#include "engine/jinja/budget.h"

namespace sparrow::jinja {
namespace {

size_t PayloadBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;  // short strings live in the header
}
size_t PayloadBytes(const List& l) {
  return l.capacity() * sizeof(Value);
}
size_t PayloadBytes(const Dict& d) {
  return d.items.capacity() * sizeof(d.items[0]);
}
size_t PayloadBytes(const Generator& g) {
  return PayloadBytes(g.items);
}

// Deleting a cell deletes the Values it holds, and so the cells they hold: a chain of 200,000
// nested lists (a template builds one with `{% set ns.x = [ns.x] %}` in loops) recursed once per
// level and overflowed the stack. The first deletion on a thread drains a queue, and the
// deletions it causes are only queued, so the stack stays one cell deep.
void DeleteSoon(void* cell, void (*destroy)(void*)) {
  thread_local std::vector<std::pair<void*, void (*)(void*)>> pending;
  thread_local bool draining = false;
  pending.emplace_back(cell, destroy);
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    const auto [next, destroy_next] = pending.back();
    pending.pop_back();
    destroy_next(next);
  }
  draining = false;
}

template <typename T>
void DeleteCell(T* cell) {
  DeleteSoon(cell, [](void* p) { delete static_cast<T*>(p); });
}

// A cell for `payload`, charged to the current render's budget until the last copy goes.
template <typename T>
std::shared_ptr<T> MakeCell(T payload) {
  RenderBudget* budget = RenderBudget::Current();
  auto cell = std::make_unique<T>(std::move(payload));
  if (budget == nullptr) return std::shared_ptr<T>(cell.release(), DeleteCell<T>);
  const size_t bytes = PayloadBytes(*cell) + RenderBudget::kValueOverhead;
  budget->Charge(bytes);
  return std::shared_ptr<T>(cell.release(), [budget, bytes](T* p) {
    budget->Release(bytes);
    DeleteCell(p);
  });
}

// Dicts are searched in order: a search costs work in proportion to the keys it passes.
void NoteSearch(size_t keys) {
  NoteScanned(keys * 16);
}

}  // namespace

const Value* Dict::Find(std::string_view key) const {
  NoteSearch(items.size());
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

const Value* Dict::Find(const Value& key) const {
  NoteSearch(items.size());
  for (const auto& [k, v] : items) {
    if (k.Equals(key)) return &v;
  }
  return nullptr;
}

void Dict::Set(Value key, Value value) {
  NoteSearch(items.size());
  for (auto& [k, v] : items) {
    if (k.Equals(key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

void Dict::Set(std::string key, Value value) {
  Set(Value::String(std::move(key)), std::move(value));
}

Value Value::String(std::string s) {
  return Value(Kind::kString, std::shared_ptr<const std::string>(MakeCell(std::move(s))));
}
Value Value::MakeList(List items) {
  return Value(Kind::kList, MakeCell(std::move(items)));
}
Value Value::MakeTuple(List items) {
  return Value(Kind::kTuple, MakeCell(std::move(items)));
}
Value Value::MakeDict(Dict d) {
  return Value(Kind::kDict, MakeCell(std::move(d)));
}
Value Value::MakeNamespace(Dict d) {
  return Value(Kind::kNamespace, MakeCell(std::move(d)));
}
Value Value::MakeGenerator(List items) {
  Generator g;
  g.items = std::move(items);
  return Value(Kind::kGenerator, MakeCell(std::move(g)));
}
Value Value::MakeCallable(std::string name,
                          std::function<Result<Value>(Interpreter&, CallArgs&)> fn) {
  return Value(Kind::kCallable,
               std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
}

namespace {

template <typename Json>
Value FromJsonImpl(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return Value::None();
    case nlohmann::json::value_t::boolean:
      return Value::Bool(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      // Python ints are unbounded; past int64 a float is the closest we hold.
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::Float(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::String(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(FromJsonImpl(e));
      return Value::MakeList(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.items.emplace_back(Value::String(it.key()), FromJsonImpl(it.value()));
      }
      return Value::MakeDict(std::move(d));
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return Value::None();
}

}  // namespace

Value Value::FromJson(const nlohmann::json& j) {
  return FromJsonImpl(j);
}
Value Value::FromJson(const nlohmann::ordered_json& j) {
  return FromJsonImpl(j);
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  if (auto* l = std::get_if<std::shared_ptr<List>>(&v_)) return l->get();
  if (auto* d = std::get_if<std::shared_ptr<Dict>>(&v_)) return d->get();
  if (auto* g = std::get_if<std::shared_ptr<Generator>>(&v_)) return g->get();
  if (auto* c = std::get_if<std::shared_ptr<Callable>>(&v_)) return c->get();
  return nullptr;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
    case Kind::kTuple:
      return !list().empty();
    case Kind::kDict:
      return !dict().items.empty();
    default:
      return true;
  }
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kGenerator:
      return "generator";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

bool Value::Equals(const Value& other) const {
  // Lists nested deeper than any JSON a template is given compare unequal rather than recurse
  // off the stack (Python raises RecursionError).
  const NestingGuard nesting;
  if (nesting.too_deep()) return false;
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) {
      return as_double() == other.as_double();
    }
    return as_int() == other.as_int();
  }
  if (is_list_like() && other.is_list_like()) {
    if (kind_ != other.kind_) return false;
    const List& a = list();
    const List& b = other.list();
    if (a.size() != b.size()) return false;
    NoteSearch(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].Equals(b[i])) return false;
    }
    return true;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      if (&as_string() == &other.as_string()) return true;  // one shared string
      NoteScanned(std::min(as_string().size(), other.as_string().size()));
      return as_string() == other.as_string();
    case Kind::kDict: {
      const Dict& a = dict();
      const Dict& b = other.dict();
      if (a.items.size() != b.items.size()) return false;
      for (const auto& [k, v] : a.items) {
        const Value* o = b.Find(static_cast<const Value&>(k));
        if (!o || !v.Equals(*o)) return false;
      }
      return true;
    }
    default:
      return identity() == other.identity();
  }
}

}  // namespace sparrow::jinja
