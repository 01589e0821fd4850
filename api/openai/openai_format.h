#pragma once
// The constrained-output fields of both endpoints: OpenAI's response_format ({"type": "text"},
// {"type": "json_object"}, {"type": "json_schema", "json_schema": {"name", "schema",
// "strict"}}) and llama-server's `grammar` (GBNF text) and `json_schema` (a schema). At most one
// of them constrains a request. What they hold is checked for shape only here; the server
// compiles it (and refuses what the grammar engine does not support, naming the field).
// Pure functions, thread-safe.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/common/result.h"

namespace sparrow::openai {

struct OutputFormatIn {
  enum class Kind { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  std::string source;   // kJsonSchema: the schema's JSON text; kGrammar: the GBNF text
  std::string field;    // where it was in the request ("response_format.json_schema.schema")
  std::string pointer;  // kJsonSchema: its JSON pointer in the body, to read it in order
};

// Fills `*out` from `body`'s response_format, grammar or json_schema.
Status ParseOutputFormat(const nlohmann::json& body, OutputFormatIn* out, std::string* param);

// Fills `*out` from a Responses request's text.format: {"type": "text"}, {"type":
// "json_object"} or {"type": "json_schema", "name", "schema", "strict", "description"} (the
// schema beside the type, not under "json_schema" as in response_format).
Status ParseTextFormat(const nlohmann::json& format, OutputFormatIn* out, std::string* param);

// The JSON text at `pointer` in the request `body`, its object members in the order the client
// wrote them (a schema's properties are produced in that order). Empty when absent.
std::string JsonTextInOrder(std::string_view body, const std::string& pointer);

}  // namespace sparrow::openai
