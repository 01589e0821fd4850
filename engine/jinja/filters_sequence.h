#pragma once
// The sequence filters (filters_sequence.cc), for the filter table in filters.cc. Internal to
// engine/jinja.
#include <string>

#include "engine/common/result.h"
#include "engine/jinja/interpreter.h"
#include "engine/jinja/value.h"

namespace sparrow::jinja {

// jinja2's environment.getitem for `attribute=` arguments: dots walk into nested items and
// integer parts index lists.
Result<Value> AttributeOf(Interpreter& in, const Value& item, const std::string& path);

Result<Value> Sort(Interpreter& in, const Value& v, CallArgs& args);
Result<Value> DictSort(Interpreter& in, const Value& v, CallArgs& args);
Result<Value> MinMax(Interpreter& in, const Value& v, CallArgs& args, bool max);
Result<Value> Unique(Interpreter& in, const Value& v, CallArgs& args);
Result<Value> Map(Interpreter& in, const Value& v, CallArgs& args);
// select, reject, selectattr, rejectattr.
Result<Value> Select(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attr);
Result<Value> Join(Interpreter& in, const Value& v, CallArgs& args);
Result<Value> First(Interpreter& in, const Value& v, bool last);
Result<Value> Batch(Interpreter& in, const Value& v, CallArgs& args);

}  // namespace sparrow::jinja
