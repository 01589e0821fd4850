#include "engine/grammar/json_schema_grammar.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_pieces.h"

namespace sparrow::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Primitive rules every schema grammar may use. Numbers have at most 16 digits before and
// after the point: the grammar narrows, and a model cannot run on digits forever.
constexpr std::string_view kPrimitives = R"(ws ::= (" " | "\n" [ \t]{0,8})?
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value ws ("," ws json-string ws ":" ws json-value ws)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
)";

// The formats, as the contents of a JSON string.
constexpr std::string_view kFormats =
    R"(fmt-date ::= [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])
fmt-time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" ([0-5] [0-9] | "60") ("." [0-9]{1,9})? ("Z" | "z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])
fmt-date-time ::= fmt-date [Tt] fmt-time
fmt-uuid ::= [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}
fmt-email-atom ::= [a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+
fmt-email ::= fmt-email-atom ("." fmt-email-atom)* "@" [a-zA-Z0-9] ([a-zA-Z0-9-]{0,61} [a-zA-Z0-9])? ("." [a-zA-Z0-9] ([a-zA-Z0-9-]{0,61} [a-zA-Z0-9])?)+
)";

// Keywords that say nothing about which documents are valid.
const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {
      "$schema",    "$id",      "$comment",  "title", "description", "default", "examples",
      "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict",  "name"};
  return k;
}

std::string Pointer(const std::string& base, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped.push_back(c);
    }
  }
  return base + "/" + escaped;
}

// "~1" is '/' and "~0" is '~' in a JSON pointer's part.
std::string UnescapePointerPart(std::string_view part) {
  std::string out;
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i] == '~' && i + 1 < part.size() && (part[i + 1] == '0' || part[i + 1] == '1')) {
      out.push_back(part[++i] == '0' ? '~' : '/');
    } else {
      out.push_back(part[i]);
    }
  }
  return out;
}

std::string Where(const std::string& pointer) {
  return pointer.empty() ? "(root)" : pointer;
}

class SchemaConverter {
 public:
  SchemaConverter(Json root, const JsonSchemaOptions& options)
      : root_(std::move(root)), options_(options) {}

  Result<std::string> Run() {
    SPARROW_ASSIGN_OR_RETURN(std::string top, Visit(root_, "", 0));
    std::string out = "root ::= " + top + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    out += kPrimitives;
    if (uses_formats_) out += kFormats;
    return out;
  }

 private:
  Status Unsupported(const std::string& pointer, const std::string& what) {
    return sparrow::Unsupported("json schema: " + Where(pointer) + ": " + what);
  }
  Status Invalid(const std::string& pointer, const std::string& what) {
    return InvalidArgument("json schema: " + Where(pointer) + ": " + what);
  }

  std::string NewRule(std::string body) {
    std::string name = "s";
    name += std::to_string(rules_.size());
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  // Keywords of `schema` outside `allowed` and the annotations are refused.
  Status CheckKeywords(const Json& schema, const std::string& pointer,
                       std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : schema.items()) {
      if (Annotations().count(key)) continue;
      bool ok = false;
      for (std::string_view a : allowed) ok = ok || a == key;
      if (!ok) return Unsupported(pointer, "keyword '" + key + "' is not supported");
    }
    return Status::Ok();
  }

  Result<std::string> Visit(const Json& schema, const std::string& pointer, int depth) {
    if (depth > options_.max_depth) {
      return Invalid(pointer, "nested deeper than " + std::to_string(options_.max_depth));
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return std::string("json-value");
      return Unsupported(pointer, "the schema 'false' allows no document");
    }
    if (!schema.is_object()) return Invalid(pointer, "a schema must be an object or a boolean");
    if (schema.contains("$ref")) {
      SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {"$ref"}));
      return Ref(schema["$ref"], Pointer(pointer, "$ref"), depth);
    }
    if (schema.contains("const")) {
      SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {"const", "type"}));
      return GbnfLiteral(schema["const"].dump());
    }
    if (schema.contains("enum")) {
      SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {"enum", "type"}));
      const Json& e = schema["enum"];
      if (!e.is_array() || e.empty()) {
        return Invalid(Pointer(pointer, "enum"), "must be a non-empty array");
      }
      std::vector<std::string> alts;
      for (const Json& v : e) alts.push_back(GbnfLiteral(v.dump()));
      return GbnfAlternatives(alts);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {key}));
      const Json& list = schema[key];
      const std::string at = Pointer(pointer, key);
      if (!list.is_array() || list.empty()) return Invalid(at, "must be a non-empty array");
      std::vector<std::string> alts;
      for (size_t i = 0; i < list.size(); ++i) {
        SPARROW_ASSIGN_OR_RETURN(std::string alt,
                                 Visit(list[i], Pointer(at, std::to_string(i)), depth + 1));
        alts.push_back(std::move(alt));
      }
      return GbnfAlternatives(alts);
    }
    if (schema.contains("allOf")) return AllOf(schema, pointer, depth);
    if (schema.contains("type")) {
      const Json& type = schema["type"];
      if (type.is_array()) {
        if (type.empty()) return Invalid(Pointer(pointer, "type"), "an empty list of types");
        std::vector<std::string> alts;
        for (size_t i = 0; i < type.size(); ++i) {
          if (!type[i].is_string()) return Invalid(Pointer(pointer, "type"), "not a type name");
          const std::string name = type[i].get<std::string>();
          SPARROW_ASSIGN_OR_RETURN(std::string alt,
                                   Typed(KeywordsFor(schema, name), name, pointer, depth));
          alts.push_back(std::move(alt));
        }
        return GbnfAlternatives(alts);
      }
      if (!type.is_string()) return Invalid(Pointer(pointer, "type"), "not a type name");
      return Typed(schema, type.get<std::string>(), pointer, depth);
    }
    // No type: what the keywords imply.
    for (const char* k : {"properties", "additionalProperties", "required"}) {
      if (schema.contains(k)) return Typed(schema, "object", pointer, depth);
    }
    for (const char* k : {"items", "prefixItems", "minItems", "maxItems"}) {
      if (schema.contains(k)) return Typed(schema, "array", pointer, depth);
    }
    for (const char* k : {"minLength", "maxLength", "pattern", "format"}) {
      if (schema.contains(k)) return Typed(schema, "string", pointer, depth);
    }
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (schema.contains(k)) return Typed(schema, "number", pointer, depth);
    }
    SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {}));
    return std::string("json-value");
  }

  // The schema a local reference names, and its JSON pointer.
  Result<std::pair<const Json*, std::string>> Resolve(const std::string& target,
                                                      const std::string& pointer) {
    if (target.empty() || target[0] != '#') {
      return Unsupported(pointer,
                         "only local references ('#...') are supported, not '" + target + "'");
    }
    const Json* node = &root_;
    std::string path = target.substr(1);
    std::string walked;
    while (!path.empty()) {
      if (path[0] != '/') return Invalid(pointer, "malformed reference '" + target + "'");
      size_t next = path.find('/', 1);
      std::string part = path.substr(1, next == std::string::npos ? std::string::npos : next - 1);
      path = next == std::string::npos ? "" : path.substr(next);
      part = UnescapePointerPart(part);
      walked = Pointer(walked, part);
      if (node->is_object() && node->contains(part)) {
        node = &(*node)[part];
      } else if (node->is_array() && !part.empty() && part.size() < 10 &&
                 part.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoull(part) < node->size()) {
        node = &(*node)[std::stoull(part)];
      } else {
        return Invalid(pointer, "reference '" + target + "' points at nothing");
      }
    }
    return std::make_pair(node, walked);
  }

  // `schema` without the keywords that only constrain other types than `type`: with a type
  // list, {"type": ["number", "string"], "maxLength": 3} bounds the strings alone.
  static Json KeywordsFor(const Json& schema, const std::string& type) {
    static const std::map<std::string, std::set<std::string>> kOwn = {
        {"object", {"properties", "required", "additionalProperties"}},
        {"array", {"items", "prefixItems", "minItems", "maxItems"}},
        {"string", {"minLength", "maxLength", "pattern", "format"}},
        {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    };
    const std::string family = type == "integer" ? "number" : type;
    Json out = Json::object();
    for (const auto& [key, value] : schema.items()) {
      bool other = false;
      for (const auto& [owner, keys] : kOwn) other = other || (owner != family && keys.count(key));
      if (!other) out[key] = value;
    }
    out["type"] = type;
    return out;
  }

  Result<std::string> Ref(const Json& ref, const std::string& pointer, int depth) {
    if (!ref.is_string()) return Invalid(pointer, "$ref must be a string");
    const std::string target = ref.get<std::string>();
    if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return it->second;
    SPARROW_ASSIGN_OR_RETURN(auto resolved, Resolve(target, pointer));
    const auto [node, walked] = resolved;
    // The rule's name is known before its body, so recursive references find it.
    const std::string name = "ref" + std::to_string(ref_rules_.size());
    ref_rules_[target] = name;
    SPARROW_ASSIGN_OR_RETURN(std::string body, Visit(*node, walked, depth + 1));
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  Result<std::string> Typed(const Json& schema, const std::string& type, const std::string& pointer,
                            int depth) {
    if (type == "object") return Object(schema, pointer, depth);
    if (type == "array") return Array(schema, pointer, depth);
    if (type == "string") return String(schema, pointer);
    if (type == "integer") return Integer(schema, pointer);
    if (type == "number") return Number(schema, pointer);
    if (type == "boolean" || type == "null") {
      SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {"type"}));
      return "json-" + type;
    }
    return Invalid(Pointer(pointer, "type"), "unknown type '" + type + "'");
  }

  struct ObjectParts {
    std::vector<std::pair<std::string, const Json*>> properties;  // in the schema's order
    std::vector<std::string> pointers;
    std::set<std::string> required;
    const Json* additional = nullptr;  // null: no other properties
    std::string additional_pointer;
  };

  Status CollectObject(const Json& schema, const std::string& pointer, ObjectParts* parts) {
    SPARROW_RETURN_IF_ERROR(
        CheckKeywords(schema, pointer, {"type", "properties", "required", "additionalProperties"}));
    if (schema.contains("type") && schema["type"] != "object") {
      return Unsupported(pointer, "allOf mixes objects with other types");
    }
    if (schema.contains("properties")) {
      const Json& props = schema["properties"];
      if (!props.is_object()) return Invalid(Pointer(pointer, "properties"), "not an object");
      for (const auto& [key, value] : props.items()) {
        for (auto& [k, v] : parts->properties) {
          if (k == key) {
            return Unsupported(Pointer(pointer, "properties"),
                               "property '" + key + "' is defined twice in allOf");
          }
        }
        parts->properties.push_back({key, &value});
        parts->pointers.push_back(Pointer(Pointer(pointer, "properties"), key));
      }
    }
    if (schema.contains("required")) {
      const Json& req = schema["required"];
      if (!req.is_array()) return Invalid(Pointer(pointer, "required"), "not an array");
      for (const Json& r : req) {
        if (!r.is_string()) return Invalid(Pointer(pointer, "required"), "not a string");
        parts->required.insert(r.get<std::string>());
      }
    }
    if (schema.contains("additionalProperties")) {
      const Json& add = schema["additionalProperties"];
      if (!(add.is_boolean() && !add.get<bool>())) {
        if (parts->additional) {
          return Unsupported(pointer, "more than one additionalProperties in allOf");
        }
        parts->additional = &add;
        parts->additional_pointer = Pointer(pointer, "additionalProperties");
      }
    }
    return Status::Ok();
  }

  Result<std::string> Object(const Json& schema, const std::string& pointer, int depth) {
    ObjectParts parts;
    SPARROW_RETURN_IF_ERROR(CollectObject(schema, pointer, &parts));
    return ObjectRule(parts, pointer, depth);
  }

  Result<std::string> AllOf(const Json& schema, const std::string& pointer, int depth) {
    SPARROW_RETURN_IF_ERROR(CheckKeywords(schema, pointer, {"allOf"}));
    const Json& list = schema["allOf"];
    const std::string at = Pointer(pointer, "allOf");
    if (!list.is_array() || list.empty()) return Invalid(at, "must be a non-empty array");
    if (list.size() == 1) return Visit(list[0], Pointer(at, "0"), depth + 1);
    ObjectParts parts;
    for (size_t i = 0; i < list.size(); ++i) {
      const Json* part = &list[i];
      std::string part_pointer = Pointer(at, std::to_string(i));
      // A reference is followed, once, to the object it names.
      if (part->is_object() && part->contains("$ref") && (*part)["$ref"].is_string()) {
        SPARROW_ASSIGN_OR_RETURN(auto resolved,
                                 Resolve((*part)["$ref"].get<std::string>(), part_pointer));
        part = resolved.first;
        part_pointer = resolved.second;
      }
      if (!part->is_object()) return Unsupported(part_pointer, "allOf of a non-object schema");
      SPARROW_RETURN_IF_ERROR(CollectObject(*part, part_pointer, &parts));
    }
    return ObjectRule(parts, pointer, depth);
  }

  Result<std::string> ObjectRule(const ObjectParts& parts, const std::string& pointer, int depth) {
    std::set<std::string> known;
    for (const auto& [k, v] : parts.properties) known.insert(k);
    for (const std::string& r : parts.required) {
      if (!known.count(r)) {
        return Unsupported(Pointer(pointer, "required"),
                           "required property '" + r + "' has no schema in properties");
      }
    }
    const size_t n = parts.properties.size();
    std::vector<std::string> kv(n);
    for (size_t i = 0; i < n; ++i) {
      SPARROW_ASSIGN_OR_RETURN(std::string value,
                               Visit(*parts.properties[i].second, parts.pointers[i], depth + 1));
      kv[i] = GbnfLiteral(Json(parts.properties[i].first).dump()) + " ws \":\" ws " + value;
    }
    // The members after the named ones: none, or any others with keys not already named.
    std::string extra_first = "\"\"", extra_rest = "\"\"";
    if (parts.additional) {
      std::string value = "json-value";
      if (!parts.additional->is_boolean()) {
        SPARROW_ASSIGN_OR_RETURN(value,
                                 Visit(*parts.additional, parts.additional_pointer, depth + 1));
      }
      // OtherKey recurses once per character of a key.
      for (const std::string& k : known) {
        if (k.size() > 256) {
          return Unsupported(pointer, "additionalProperties beside a property name over 256 bytes");
        }
      }
      const std::string key = known.empty() ? "json-string" : OtherKey(known);
      const std::string member = NewRule(key + " ws \":\" ws " + value);
      extra_first = "(" + member + " ws (\",\" ws " + member + " ws)*)?";
      extra_rest = "(\",\" ws " + member + " ws)*";
    }
    // first[i]: members i.. when none was written yet; rest[i]: when one was (comma first).
    std::string first = extra_first, rest = extra_rest;
    for (size_t i = n; i-- > 0;) {
      const bool req = parts.required.count(parts.properties[i].first) > 0;
      const std::string rest_next = NewRule(rest);
      const std::string first_next = NewRule(first);
      rest = "\",\" ws " + kv[i] + " ws " + rest_next + (req ? "" : " | " + rest_next);
      first = kv[i] + " ws " + rest_next + (req ? "" : " | " + first_next);
    }
    return "\"{\" ws " + NewRule(first) + " \"}\"";
  }

  // A JSON string that is none of `keys`: it leaves the trie of the keys somewhere, or stops
  // at a node that ends no key. Escapes only after it has left (so no escape spells a key).
  std::string OtherKey(const std::set<std::string>& keys) {
    std::set<std::string> escaped;  // as written between the quotes
    for (const std::string& k : keys) {
      const std::string d = Json(k).dump();
      escaped.insert(d.substr(1, d.size() - 2));
    }
    return "\"\\\"\" " + OtherKeyNode(escaped, "");
  }

  std::string OtherKeyNode(const std::set<std::string>& keys, const std::string& prefix) {
    std::map<std::string, std::set<std::string>> children;  // next character -> keys
    bool is_key = false;
    for (const std::string& k : keys) {
      if (k == prefix) is_key = true;
      if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0) {
        const size_t len = UnitLength(k, prefix.size());
        children[k.substr(prefix.size(), len)].insert(k);
      }
    }
    std::vector<std::string> alts;
    if (!is_key) alts.push_back("\"\\\"\"");
    std::string excluded = "\"\\\\\\x00-\\x1F";
    for (const auto& [ch, sub] : children) {
      const std::string next = prefix + ch;
      alts.push_back(GbnfLiteral(ch) + " " + NewRule(OtherKeyNode(sub, next)));
      if (ch[0] == '\\') continue;  // escapes are never where a key leaves the trie
      excluded += (ch == "]" || ch == "-" || ch == "^") ? "\\" + ch : ch;
    }
    alts.push_back("[^" + excluded + "] json-char* \"\\\"\"");
    return GbnfAlternatives(alts);
  }

  // One character of an escaped key: an escape sequence or one UTF-8 character.
  static size_t UnitLength(const std::string& s, size_t at) {
    if (s[at] == '\\') return s[at + 1] == 'u' ? 6 : 2;
    const uint8_t lead = static_cast<uint8_t>(s[at]);
    return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  }

  Result<std::string> Array(const Json& schema, const std::string& pointer, int depth) {
    SPARROW_RETURN_IF_ERROR(
        CheckKeywords(schema, pointer, {"type", "items", "prefixItems", "minItems", "maxItems"}));
    SPARROW_ASSIGN_OR_RETURN(uint64_t min, Count(schema, "minItems", pointer, 0));
    SPARROW_ASSIGN_OR_RETURN(uint64_t max, Count(schema, "maxItems", pointer, UINT64_MAX));
    if (min > max) return Invalid(pointer, "minItems is above maxItems");
    std::vector<std::string> prefix;
    if (schema.contains("prefixItems")) {
      const Json& p = schema["prefixItems"];
      if (!p.is_array()) return Invalid(Pointer(pointer, "prefixItems"), "not an array");
      for (size_t i = 0; i < p.size(); ++i) {
        SPARROW_ASSIGN_OR_RETURN(
            std::string item,
            Visit(p[i], Pointer(Pointer(pointer, "prefixItems"), std::to_string(i)), depth + 1));
        prefix.push_back(std::move(item));
      }
    }
    std::string item = "json-value";
    bool more = true;  // items after the prefix
    if (schema.contains("items")) {
      const Json& it = schema["items"];
      if (it.is_boolean() && !it.get<bool>()) {
        more = false;
      } else if (it.is_array()) {
        return Unsupported(Pointer(pointer, "items"), "an array of items (use prefixItems)");
      } else {
        SPARROW_ASSIGN_OR_RETURN(item, Visit(it, Pointer(pointer, "items"), depth + 1));
      }
    }
    constexpr uint64_t kMaxCount = 1000;
    if (min > kMaxCount || (max != UINT64_MAX && max > kMaxCount && max - min > kMaxCount)) {
      return Unsupported(pointer, "minItems / maxItems above " + std::to_string(kMaxCount));
    }
    // Items k.. are written as "," item, from the back: prefix items one rule each, then the
    // items of `items` as counted repetitions. The array may stop before item k once k >= min.
    const uint64_t fixed = prefix.size();
    if (!more && min > fixed) return Invalid(pointer, "minItems exceeds the prefixItems allowed");
    const uint64_t limit = more ? max : std::min<uint64_t>(max, fixed);
    std::string body = "\"\"";
    if (limit > 0) {
      const uint64_t t = std::max<uint64_t>(fixed, 1);  // where the repeated items start
      std::string after;
      if (limit > t) {
        const std::string elem = NewRule("\",\" ws " + item + " ws");
        const uint64_t need = min > t ? min - t : 0;
        if (need) after = elem + "{" + std::to_string(need) + "}";
        if (limit == UINT64_MAX) {
          after += " " + elem + "*";
        } else if (limit - t > need) {
          after += " " + elem + "{0," + std::to_string(limit - t - need) + "}";
        }
      }
      after = after.empty() ? "\"\"" : NewRule(after);
      for (uint64_t k = std::min<uint64_t>(fixed, limit); k-- > 1;) {
        const std::string here = "\",\" ws " + prefix[k] + " ws " + after;
        after = NewRule(k >= min ? here + " | \"\"" : here);
      }
      body = (fixed > 0 ? prefix[0] : item) + " ws " + after;
      if (min == 0) body = "(" + body + ")?";
    }
    return "\"[\" ws " + NewRule(body) + " \"]\"";
  }

  Result<uint64_t> Count(const Json& schema, const char* key, const std::string& pointer,
                         uint64_t fallback) {
    if (!schema.contains(key)) return fallback;
    const Json& v = schema[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      return Invalid(Pointer(pointer, key), "must be a non-negative integer");
    }
    return v.get<uint64_t>();
  }

  Result<std::string> String(const Json& schema, const std::string& pointer) {
    SPARROW_RETURN_IF_ERROR(
        CheckKeywords(schema, pointer, {"type", "minLength", "maxLength", "pattern", "format"}));
    const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
    if (schema.contains("format")) {
      if (lengths || schema.contains("pattern")) {
        return Unsupported(pointer, "format together with a length or a pattern");
      }
      const Json& f = schema["format"];
      static const std::set<std::string> kKnown = {"date", "time", "date-time", "uuid", "email"};
      if (!f.is_string() || !kKnown.count(f.get<std::string>())) {
        return Unsupported(Pointer(pointer, "format"), "format " + f.dump() + " is not supported");
      }
      uses_formats_ = true;
      return "\"\\\"\" fmt-" + f.get<std::string>() + " \"\\\"\"";
    }
    if (schema.contains("pattern")) {
      if (lengths) return Unsupported(pointer, "pattern together with minLength / maxLength");
      const Json& p = schema["pattern"];
      if (!p.is_string()) return Invalid(Pointer(pointer, "pattern"), "not a string");
      auto body = RegexToGbnf(p.get<std::string>(), options_.max_depth);
      if (!body.ok()) {
        return Status(body.status().code(), "json schema: " + Pointer(pointer, "pattern") + ": " +
                                                body.status().message());
      }
      return "\"\\\"\" " + NewRule(*body) + " \"\\\"\"";
    }
    if (!lengths) return std::string("json-string");
    SPARROW_ASSIGN_OR_RETURN(uint64_t min, Count(schema, "minLength", pointer, 0));
    SPARROW_ASSIGN_OR_RETURN(uint64_t max, Count(schema, "maxLength", pointer, UINT64_MAX));
    if (min > max) return Invalid(pointer, "minLength is above maxLength");
    constexpr uint64_t kMaxLength = 10000;
    if (min > kMaxLength || (max != UINT64_MAX && max > kMaxLength)) {
      return Unsupported(pointer, "string lengths above " + std::to_string(kMaxLength));
    }
    const std::string reps = max == UINT64_MAX
                                 ? "{" + std::to_string(min) + ",}"
                                 : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
    return "\"\\\"\" json-char" + reps + " \"\\\"\"";
  }

  // minimum / maximum / exclusive* rounded inward to integers (for numbers that narrows: an
  // exclusive integer bound excludes the whole unit next to it).
  using Bounds = std::pair<std::optional<int64_t>, std::optional<int64_t>>;
  Result<Bounds> IntegerBounds(const Json& schema, const std::string& pointer) {
    SPARROW_RETURN_IF_ERROR(CheckKeywords(
        schema, pointer, {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}));
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* key, bool lower, bool exclusive) -> Status {
      if (!schema.contains(key)) return Status::Ok();
      const Json& v = schema[key];
      if (!v.is_number()) {
        return Unsupported(Pointer(pointer, key), "a bound that is not a number");
      }
      const double d = v.get<double>();
      if (std::fabs(d) > 9e15) return Unsupported(Pointer(pointer, key), "a bound past 9e15");
      int64_t b = static_cast<int64_t>(lower ? std::ceil(d) : std::floor(d));
      if (exclusive && static_cast<double>(b) == d) b += lower ? 1 : -1;
      if (lower) {
        lo = lo ? std::max(*lo, b) : b;
      } else {
        hi = hi ? std::min(*hi, b) : b;
      }
      return Status::Ok();
    };
    SPARROW_RETURN_IF_ERROR(bound("minimum", true, false));
    SPARROW_RETURN_IF_ERROR(bound("exclusiveMinimum", true, true));
    SPARROW_RETURN_IF_ERROR(bound("maximum", false, false));
    SPARROW_RETURN_IF_ERROR(bound("exclusiveMaximum", false, true));
    if (lo && hi && *lo > *hi) return Invalid(pointer, "no integer lies within the bounds");
    return Bounds{lo, hi};
  }

  Result<std::string> Integer(const Json& schema, const std::string& pointer) {
    SPARROW_ASSIGN_OR_RETURN(Bounds b, IntegerBounds(schema, pointer));
    if (!b.first && !b.second) return std::string("json-integer");
    return NewRule(IntegerRangeGbnf(b.first, b.second));
  }

  Result<std::string> Number(const Json& schema, const std::string& pointer) {
    SPARROW_ASSIGN_OR_RETURN(Bounds b, IntegerBounds(schema, pointer));
    if (!b.first && !b.second) return std::string("json-number");
    return NewRule(NumberRangeGbnf(b.first, b.second));
  }

  Json root_;
  JsonSchemaOptions options_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> ref_rules_;
  bool uses_formats_ = false;
};

// The deepest nesting of arrays and objects in a JSON text (strings skipped).
size_t JsonNesting(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Result<std::string> JsonSchemaToGbnf(std::string_view schema_json,
                                     const JsonSchemaOptions& options) {
  if (schema_json.size() > options.max_schema_bytes) {
    return InvalidArgument("json schema: " + std::to_string(schema_json.size()) +
                           " bytes, more than the limit of " +
                           std::to_string(options.max_schema_bytes));
  }
  // Values are dumped recursively (const, enum): bound the nesting before parsing.
  const size_t limit = static_cast<size_t>(options.max_depth) * 4 + 8;
  if (JsonNesting(schema_json) > limit) {
    return InvalidArgument("json schema: nested deeper than " + std::to_string(limit) +
                           " arrays and objects");
  }
  Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgument("json schema: not a valid JSON document");
  return SchemaConverter(std::move(schema), options).Run();
}

std::string AnyJsonObjectGbnf() {
  return "root ::= json-object\n" + std::string(kPrimitives);
}

Result<Grammar> CompileJsonSchema(std::string_view schema_json, const JsonSchemaOptions& options) {
  SPARROW_ASSIGN_OR_RETURN(std::string gbnf, JsonSchemaToGbnf(schema_json, options));
  return ParseGbnf(gbnf);
}

}  // namespace sparrow::grammar
