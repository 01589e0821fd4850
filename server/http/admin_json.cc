#include "server/http/admin_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <cstdlib>

#include "engine/common/check.h"

namespace sparrow::server {
namespace {

using json = nlohmann::json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
namespace adminpb = ::sparrow::admin::v1;

const FieldDescriptor* FieldOf(const Descriptor* d, int number) {
  const FieldDescriptor* f = d->FindFieldByNumber(number);
  SPARROW_CHECK(f != nullptr);
  return f;
}

// Unset, these print as null rather than not at all: the status's budget and the memory answer's
// operator budget and plan always did, and clients test them against null.
bool NullWhenUnset(const FieldDescriptor* f) {
  static const FieldDescriptor* const kFields[] = {
      FieldOf(adminpb::MemoryStatus::descriptor(), adminpb::MemoryStatus::kBudgetBytesFieldNumber),
      FieldOf(adminpb::MemoryBudget::descriptor(),
              adminpb::MemoryBudget::kOperatorBudgetBytesFieldNumber),
      FieldOf(adminpb::MemoryBudget::descriptor(), adminpb::MemoryBudget::kPlanFieldNumber),
  };
  for (const FieldDescriptor* n : kFields) {
    if (n == f) return true;
  }
  return false;
}

void FixMessage(const Descriptor* d, json& j);

// One value of field `f` as the printer wrote it, in place.
void FixValue(const FieldDescriptor* f, json& v) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
      if (v.is_string())
        v = static_cast<int64_t>(
            std::strtoll(v.get_ref<const std::string&>().c_str(), nullptr, 10));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      if (v.is_string())
        v = static_cast<uint64_t>(
            std::strtoull(v.get_ref<const std::string&>().c_str(), nullptr, 10));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      // A whole number prints as 1 and NaN as "NaN"; the routes sent 1.0 and null.
      v = v.is_number() ? json(v.get<double>()) : json(nullptr);
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      FixMessage(f->message_type(), v);
      break;
    default:
      break;
  }
}

void FixMessage(const Descriptor* d, json& j) {
  if (!j.is_object()) return;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const auto it = j.find(f->name());
    if (it == j.end()) {
      if (NullWhenUnset(f)) j[f->name()] = nullptr;
    } else if (f->is_map()) {
      const FieldDescriptor* value = f->message_type()->map_value();
      for (auto& [key, v] : it->items()) FixValue(value, v);
    } else if (f->is_repeated()) {
      for (auto& v : *it) FixValue(f, v);
    } else {
      FixValue(f, *it);
    }
  }
}

}  // namespace

json AdminJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string text;
  const auto st = google::protobuf::util::MessageToJsonString(m, &text, o);
  // The admin messages have no Any or other type the printer can refuse.
  SPARROW_CHECK(st.ok());
  json j = json::parse(text);
  FixMessage(m.GetDescriptor(), j);
  return j;
}

json ActionEventJson(const adminpb::ActionEvent& e) {
  json j = AdminJson(e);
  j.erase("args_json");
  json args = json::parse(e.args_json(), nullptr, false);
  j["args"] = args.is_discarded() ? json::object() : std::move(args);
  return j;
}

}  // namespace sparrow::server
