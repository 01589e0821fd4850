// jinja2's filters over sequences: sorting, aggregates, map, select and friends. Like jinja2,
// map, select, unique, batch and reverse return one-shot generators.
#include "engine/jinja/filters_sequence.h"

#include <algorithm>

#include "engine/jinja/budget.h"
#include "engine/jinja/builtins.h"
#include "engine/jinja/strings.h"

namespace sparrow::jinja {
namespace {

using Args = std::vector<std::optional<Value>>;

bool Flag(const std::optional<Value>& v) {
  return v && v->Truthy();
}

}  // namespace

Result<Value> AttributeOf(Interpreter& in, const Value& item, const std::string& path) {
  Value v = item;
  size_t b = 0;
  while (true) {
    size_t e = path.find('.', b);
    std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    Value key = Value::String(part);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      key = Value::Int(std::strtoll(part.c_str(), nullptr, 10));
    }
    SPARROW_ASSIGN_OR_RETURN(v, in.GetItem(v, key));
    if (e == std::string::npos) return v;
    b = e + 1;
  }
}

namespace {

// jinja2's sort key: strings compared case-insensitively unless asked otherwise.
Value SortKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::String(Lower(v.as_string()));
  return v;
}

Status SortValues(List* items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // n log n comparisons, each counted as work (a quarter step).
  size_t log2 = 1;
  while ((size_t{1} << log2) < order.size()) ++log2;
  NoteScanned(order.size() * log2 * 16);
  Status error;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    Result<bool> lt = reverse ? Less(keys[b], keys[a]) : Less(keys[a], keys[b]);
    if (!lt.ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  SPARROW_RETURN_IF_ERROR(error);
  List sorted;
  for (size_t i : order) sorted.push_back((*items)[i]);
  *items = std::move(sorted);
  return Status::Ok();
}

}  // namespace

Result<Value> Sort(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a,
                           BindArgs(args, "sort", {"reverse", "case_sensitive", "attribute"}));
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  std::vector<Value> keys;
  for (const Value& item : items) {
    Value k = item;
    if (a[2] && !a[2]->is_none()) {
      SPARROW_ASSIGN_OR_RETURN(k, AttributeOf(in, item, a[2]->Str()));
    }
    keys.push_back(SortKey(k, Flag(a[1])));
  }
  SPARROW_RETURN_IF_ERROR(SortValues(&items, keys, Flag(a[0])));
  return Value::MakeList(std::move(items));
}

Result<Value> DictSort(Interpreter&, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "dictsort", {"case_sensitive", "by", "reverse"}));
  if (!v.is_dict()) return InvalidArgument("You can only sort by either \"key\" or \"value\"");
  bool by_value = a[1] && a[1]->Str() == "value";
  List items;
  std::vector<Value> keys;
  for (const auto& [k, e] : v.dict().items) {
    items.push_back(Value::MakeTuple({k, e}));
    keys.push_back(SortKey(by_value ? e : k, Flag(a[0])));
  }
  SPARROW_RETURN_IF_ERROR(SortValues(&items, keys, Flag(a[2])));
  return Value::MakeList(std::move(items));
}

Result<Value> MinMax(Interpreter& in, const Value& v, CallArgs& args, bool max) {
  SPARROW_ASSIGN_OR_RETURN(Args a,
                           BindArgs(args, max ? "max" : "min", {"case_sensitive", "attribute"}));
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    Value k = items[i];
    if (a[1] && !a[1]->is_none()) {
      SPARROW_ASSIGN_OR_RETURN(k, AttributeOf(in, items[i], a[1]->Str()));
    }
    k = SortKey(k, Flag(a[0]));
    if (i > 0) {
      SPARROW_ASSIGN_OR_RETURN(bool better, max ? Less(best_key, k) : Less(k, best_key));
      if (!better) continue;
    }
    best = i;
    best_key = k;
  }
  return items[best];
}

Result<Value> Unique(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "unique", {"case_sensitive", "attribute"}));
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  List out;
  std::vector<Value> seen;
  for (const Value& item : items) {
    Value k = item;
    if (a[1] && !a[1]->is_none()) {
      SPARROW_ASSIGN_OR_RETURN(k, AttributeOf(in, item, a[1]->Str()));
    }
    if (k.is_list_like() || k.is_mapping()) {
      return InvalidArgument("unhashable type: '" + k.TypeName() + "'");
    }
    k = SortKey(k, Flag(a[0]));
    bool dup = false;
    for (const Value& s : seen) dup = dup || s.Equals(k);
    SPARROW_RETURN_IF_ERROR(in.Tick(static_cast<int64_t>(seen.size())));
    if (dup) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::MakeGenerator(std::move(out));
}

Result<Value> Map(Interpreter& in, const Value& v, CallArgs& args) {
  // jinja2 maps over nothing when the value is false (None, "", []).
  if (!v.Truthy()) return Value::MakeGenerator({});
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  List out;
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [k, x] : args.keyword) {
    if (k == "attribute") attribute = &x;
    if (k == "default") dflt = &x;
  }
  if (attribute) {
    for (const Value& item : items) {
      SPARROW_ASSIGN_OR_RETURN(Value r, AttributeOf(in, item, attribute->Str()));
      if (r.is_undefined() && dflt) r = *dflt;
      out.push_back(std::move(r));
    }
    return Value::MakeGenerator(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return InvalidArgument("map requires a filter argument");
  }
  std::string name = args.positional[0].as_string();
  if (!IsFilter(name)) return Unsupported("filter '" + name + "' is not supported");
  for (const Value& item : items) {
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    SPARROW_ASSIGN_OR_RETURN(Value r, ApplyFilter(in, name, item, rest));
    out.push_back(std::move(r));
  }
  return Value::MakeGenerator(std::move(out));
}

// select, reject, selectattr, rejectattr.
Result<Value> Select(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attr) {
  // Like map, jinja2 selects from nothing when the value is false.
  if (!v.Truthy()) return Value::MakeGenerator({});
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (args.positional.empty()) return InvalidArgument("Missing parameter for attribute name");
    attr = args.positional[next++].Str();
  }
  std::string test;
  if (next < args.positional.size()) test = args.positional[next++].Str();
  if (!test.empty() && !IsTest(test)) return Unsupported("test '" + test + "' is not supported");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                         args.positional.end());
  List out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attr) {
      SPARROW_ASSIGN_OR_RETURN(subject, AttributeOf(in, item, attr));
    }
    bool pass = subject.Truthy();
    if (!test.empty()) {
      CallArgs copy = rest;
      SPARROW_ASSIGN_OR_RETURN(pass, ApplyTest(in, test, subject, copy));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::MakeGenerator(std::move(out));
}

Result<Value> Join(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "join", {"d", "attribute"}));
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  std::string sep = a[0] ? a[0]->Str() : "";
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (a[1] && !a[1]->is_none()) {
      SPARROW_ASSIGN_OR_RETURN(item, AttributeOf(in, item, a[1]->Str()));
    }
    std::string text = item.is_string() ? std::string() : item.Str();
    const std::string& piece = item.is_string() ? item.as_string() : text;
    SPARROW_RETURN_IF_ERROR(in.CheckSize(out.size() + sep.size() + piece.size()));
    if (i > 0) out += sep;
    out += piece;
  }
  return Value::String(std::move(out));
}

Result<Value> First(Interpreter& in, const Value& v, bool last) {
  if (last && v.kind() == Value::Kind::kGenerator) {
    return InvalidArgument("'generator' object is not reversible");
  }
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  if (items.empty()) {
    return Value::Undefined(last ? "No last item, sequence was empty."
                                 : "No first item, sequence was empty.");
  }
  return last ? items.back() : items.front();
}

Result<Value> Batch(Interpreter& in, const Value& v, CallArgs& args) {
  SPARROW_ASSIGN_OR_RETURN(Args a, BindArgs(args, "batch", {"linecount", "fill_with"}));
  if (!a[0] || !a[0]->is_int() || a[0]->as_int() <= 0) {
    return InvalidArgument("batch: linecount must be a positive int");
  }
  auto n = static_cast<size_t>(a[0]->as_int());
  SPARROW_ASSIGN_OR_RETURN(List items, in.Iterate(v));
  List out;
  for (size_t i = 0; i < items.size(); i += n) {
    List row(items.begin() + static_cast<std::ptrdiff_t>(i),
             items.begin() + static_cast<std::ptrdiff_t>(std::min(i + n, items.size())));
    while (a[1] && !a[1]->is_none() && row.size() < n) row.push_back(*a[1]);
    out.push_back(Value::MakeList(std::move(row)));
  }
  return Value::MakeGenerator(std::move(out));
}

}  // namespace sparrow::jinja
