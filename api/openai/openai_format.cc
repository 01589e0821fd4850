#include "api/openai/openai_format.h"

#include "api/openai/json_fields.h"
#include "api/openai/json_limits.h"

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

Status Schema(const json& schema, const std::string& field, const std::string& pointer,
              OutputFormatIn* out, std::string* param) {
  if (!schema.is_object() && !schema.is_boolean()) {
    return Bad(param, field, "must be a JSON schema (an object or a boolean)");
  }
  out->kind = OutputFormatIn::Kind::kJsonSchema;
  out->source = schema.dump();
  out->field = field;
  out->pointer = pointer;
  return Status::Ok();
}

// The "type" of a format object `f` ("response_format", "text.format"): text, json_object or
// json_schema.
Status FormatType(const json& format, const std::string& f, std::string* t, std::string* param) {
  if (!format.is_object()) return Bad(param, f, "must be an object with a \"type\"");
  const json* type = Member(format, "type");
  if (type == nullptr || !type->is_string()) {
    return Bad(param, f + ".type", "must be \"text\", \"json_object\" or \"json_schema\"");
  }
  *t = type->get<std::string>();
  if (*t != "text" && *t != "json_object" && *t != "json_schema") {
    return Bad(param, f + ".type",
               "must be \"text\", \"json_object\" or \"json_schema\"; got '" + *t + "'");
  }
  return Status::Ok();
}

// A json_schema format's optional "name" and "strict", in object `o` at `f`.
Status NameAndStrict(const json& o, const std::string& f, std::string* param) {
  const json* name = Member(o, "name");
  if (name != nullptr && (!name->is_string() || name->get<std::string>().empty() ||
                          name->get<std::string>().size() > 64)) {
    return Bad(param, f + ".name", "must be a string of 1 to 64 characters");
  }
  const json* strict = Member(o, "strict");
  if (strict != nullptr && !strict->is_boolean()) {
    return Bad(param, f + ".strict", "must be true or false");
  }
  return Status::Ok();
}

Status ResponseFormat(const json& rf, OutputFormatIn* out, std::string* param) {
  const std::string f = "response_format";
  std::string t;
  SPARROW_RETURN_IF_ERROR(FormatType(rf, f, &t, param));
  if (t == "text") return Status::Ok();
  if (t == "json_object") {
    // llama-server's form: a schema beside the type.
    if (const json* s = Member(rf, "schema")) {
      return Schema(*s, f + ".schema", "/response_format/schema", out, param);
    }
    out->kind = OutputFormatIn::Kind::kJsonObject;
    out->field = f;
    return Status::Ok();
  }
  const json* js = Member(rf, "json_schema");
  if (js == nullptr || !js->is_object()) {
    return Bad(param, f + ".json_schema", "must be an object with \"name\" and \"schema\"");
  }
  SPARROW_RETURN_IF_ERROR(NameAndStrict(*js, f + ".json_schema", param));
  const json* schema = Member(*js, "schema");
  // OpenAI's default when no schema is given: any JSON object.
  if (schema == nullptr) {
    out->kind = OutputFormatIn::Kind::kJsonObject;
    out->field = f + ".json_schema";
    return Status::Ok();
  }
  return Schema(*schema, f + ".json_schema.schema", "/response_format/json_schema/schema", out,
                param);
}

}  // namespace

Status ParseOutputFormat(const json& b, OutputFormatIn* out, std::string* param) {
  const json* rf = Member(b, "response_format");
  const json* grammar = Member(b, "grammar");
  const json* schema = Member(b, "json_schema");
  const int given = (rf != nullptr) + (grammar != nullptr) + (schema != nullptr);
  if (given > 1) {
    return Bad(param, grammar != nullptr ? "grammar" : "json_schema",
               "cannot be combined with another of 'response_format', 'grammar' and "
               "'json_schema'");
  }
  if (rf != nullptr) return ResponseFormat(*rf, out, param);
  if (schema != nullptr) return Schema(*schema, "json_schema", "/json_schema", out, param);
  if (grammar != nullptr) {
    if (!grammar->is_string()) return Bad(param, "grammar", "must be a string of GBNF rules");
    if (grammar->get<std::string>().empty()) return Status::Ok();  // llama-server: none
    out->kind = OutputFormatIn::Kind::kGrammar;
    out->source = grammar->get<std::string>();
    out->field = "grammar";
  }
  return Status::Ok();
}

Status ParseTextFormat(const json& format, OutputFormatIn* out, std::string* param) {
  const std::string f = "text.format";
  std::string t;
  SPARROW_RETURN_IF_ERROR(FormatType(format, f, &t, param));
  if (t == "text") return Status::Ok();
  if (t == "json_object") {
    out->kind = OutputFormatIn::Kind::kJsonObject;
    out->field = f;
    return Status::Ok();
  }
  SPARROW_RETURN_IF_ERROR(NameAndStrict(format, f, param));
  const json* description = Member(format, "description");
  if (description != nullptr && !description->is_string()) {
    return Bad(param, f + ".description", "must be a string");
  }
  const json* schema = Member(format, "schema");
  if (schema == nullptr) return Bad(param, f + ".schema", "is required with type json_schema");
  return Schema(*schema, f + ".schema", "/text/format/schema", out, param);
}

std::string JsonTextInOrder(std::string_view body, const std::string& pointer) {
  auto ordered = ParseBoundedJson<nlohmann::ordered_json>(body, "");
  if (!ordered.ok()) return "";
  const nlohmann::ordered_json::json_pointer ptr(pointer);
  if (!ordered->contains(ptr)) return "";
  return (*ordered)[ptr].dump();
}

}  // namespace sparrow::openai
