#pragma once
// JSON Schema -> GBNF, for `response_format` and tool parameters. The grammar produces only
// documents that validate against the schema; where the schema allows more than a grammar can
// say simply, the grammar narrows it (object properties in the schema's order, no additional
// properties unless `additionalProperties` allows them, bounded digits in numbers, no escapes
// in extra keys), never the other way. The supported subset: `type` (and lists of types),
// `enum`, `const`, `properties` / `required` / `additionalProperties`, `items` / `prefixItems` /
// `minItems` / `maxItems`, `minLength` / `maxLength`, `pattern` (ECMAScript's regex subset:
// no look-around or back-references), `minimum` / `maximum` / `exclusiveMinimum` /
// `exclusiveMaximum` on integers and numbers (a number's bounds rounded inward to integers,
// and no exponent), `anyOf` / `oneOf`, `allOf` of objects, `$ref` to `#`,
// `#/$defs/...` or `#/definitions/...` (recursion included), and the formats `date`, `time`,
// `date-time`, `uuid`, `email`. Annotations (`title`, `description`, `$schema`, `examples`,
// ...) are ignored. Anything else is Unsupported naming the keyword and its JSON pointer
// ("json schema: /properties/a: keyword 'minProperties' is not supported"); a schema nested
// deeper than max_depth is InvalidArgument. Stateless; thread-safe.
#include <string>
#include <string_view>

#include "engine/common/result.h"
#include "engine/grammar/grammar.h"

namespace sparrow::grammar {

struct JsonSchemaOptions {
  int max_depth = 64;                 // nesting of subschemas (refs count once per use)
  size_t max_schema_bytes = 1 << 20;  // the schema's JSON text
};

// The GBNF text of `schema_json` (a JSON document: an object or a boolean).
Result<std::string> JsonSchemaToGbnf(std::string_view schema_json,
                                     const JsonSchemaOptions& options = {});
// The GBNF of `{"type": "json_object"}`: any JSON object.
std::string AnyJsonObjectGbnf();
// JsonSchemaToGbnf, then ParseGbnf.
Result<Grammar> CompileJsonSchema(std::string_view schema_json,
                                  const JsonSchemaOptions& options = {});

}  // namespace sparrow::grammar
