#pragma once
// The built-ins of the environment Hugging Face renders chat templates in: jinja2's filters and
// tests (tojson replaced by transformers' json.dumps version), the methods of str, dict and
// list that jinja2's ImmutableSandboxedEnvironment allows, and the globals range, namespace,
// dict, raise_exception and strftime_now. Errors come back without a location; the
// interpreter adds it. Thread-safe.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/common/result.h"
#include "engine/jinja/interpreter.h"
#include "engine/jinja/value.h"

namespace sparrow::jinja {

bool IsFilter(std::string_view name);
bool IsTest(std::string_view name);
Result<Value> ApplyFilter(Interpreter& in, std::string_view name, const Value& subject,
                          CallArgs& args);
Result<bool> ApplyTest(Interpreter& in, std::string_view name, const Value& subject,
                       CallArgs& args);

// obj.name for a str, dict or list method: a bound callable, or an undefined that fails with
// jinja2's message when used (the sandbox's refusal for the methods that mutate); nothing when
// the type has no method of that name.
std::optional<Value> GetMethod(const Value& obj, std::string_view name);

std::unordered_map<std::string, Value> MakeGlobals();

// Binds positional and keyword arguments to `names` (missing ones stay empty); an unknown
// keyword or too many positional arguments is an error naming `fn`.
Result<std::vector<std::optional<Value>>> BindArgs(CallArgs& args, std::string_view fn,
                                                   std::initializer_list<std::string_view> names);

// Python's `format % args` for %s, %r, %d, %i, %f and %% with flags, width and precision;
// `args` is a tuple of values, a dict for %(name)s, or a single value.
Result<std::string> PercentFormat(const std::string& format, const Value& args);

// jinja2's object_type_repr: "None", "dict object"...
std::string ObjectTypeRepr(const Value& v);
// An undefined value raising its UndefinedError.
Status UndefinedError(const Value& undefined);
// jinja2's sort key: strings folded to lower case unless case-sensitive. Python's `<`.
Result<bool> Less(const Value& a, const Value& b);
// Python's `x in container`.
Result<bool> Contains(const Value& container, const Value& x);

}  // namespace sparrow::jinja
