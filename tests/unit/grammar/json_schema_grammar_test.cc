// JSON Schema -> grammar: documents the schema accepts match, documents it refuses do not,
// and what is outside the subset is refused with its keyword and pointer.
#include "engine/grammar/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_dfa.h"
#include "engine/grammar/json_schema_pieces.h"
#include "tests/unit/grammar/grammar_test_util.h"

namespace sparrow::grammar {
namespace {

using testing::FullMatch;

struct SchemaCase {
  std::string schema;
  std::vector<std::string> valid, invalid;
};

void ExpectLanguage(const SchemaCase& c) {
  auto gbnf = JsonSchemaToGbnf(c.schema);
  ASSERT_TRUE(gbnf.ok()) << c.schema << ": " << gbnf.status().ToString();
  auto g = ParseGbnf(*gbnf);
  ASSERT_TRUE(g.ok()) << c.schema << ": " << g.status().ToString() << "\n" << *gbnf;
  GrammarDfa dfa(std::make_shared<const Grammar>(std::move(g).value()), {});
  for (const std::string& doc : c.valid) {
    EXPECT_TRUE(FullMatch(dfa, doc)) << c.schema << " should accept " << doc << "\n" << *gbnf;
  }
  for (const std::string& doc : c.invalid) {
    EXPECT_FALSE(FullMatch(dfa, doc)) << c.schema << " should refuse " << doc << "\n" << *gbnf;
  }
}

TEST(JsonSchemaGrammarTest, Types) {
  ExpectLanguage({R"({"type": "string"})",
                  {R"("")", R"("a b")", R"("\u00e9\n\"")"},
                  {"a", R"("\q")", "\"\x01\"", R"("\ud800")", "1"}});
  ExpectLanguage({R"({"type": "integer"})", {"0", "-12", "1234567890"}, {"01", "1.5", "+1", ""}});
  ExpectLanguage({R"({"type": "number"})", {"0", "-1.25", "3e10", "2.5E-3"}, {".5", "1.", "--1"}});
  ExpectLanguage({R"({"type": "boolean"})", {"true", "false"}, {"True", "1"}});
  ExpectLanguage({R"({"type": "null"})", {"null"}, {"nil"}});
  ExpectLanguage({R"({"type": ["integer", "null"]})", {"3", "null"}, {"\"3\""}});
  ExpectLanguage({R"({"type": ["integer", "string"], "maxLength": 2, "minimum": 3})",
                  {"3", "40", R"("ab")"},
                  {"2", R"("abc")"}});
  ExpectLanguage({"{}", {"1", "[1, {\"a\": null}]", "{\n  \"k\": \"v\"\n}"}, {"[1,]", "{a:1}"}});
  ExpectLanguage({"true", {"\"x\""}, {"x"}});
}

TEST(JsonSchemaGrammarTest, EnumAndConst) {
  ExpectLanguage({R"({"enum": ["red", 2, null, {"a": [1]}]})",
                  {R"("red")", "2", "null", R"({"a":[1]})"},
                  {R"("blue")", "3", R"({"a": [1]})"}});
  ExpectLanguage({R"({"const": "x\"y"})", {R"("x\"y")"}, {R"("xy")"}});
}

TEST(JsonSchemaGrammarTest, Objects) {
  const std::string person = R"({"type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                   "email": {"type": "string"}},
    "required": ["name"]})";
  ExpectLanguage({person,
                  {R"({"name": "a"})", R"({"name": "a", "age": 3})",
                   R"({ "name" : "a" , "email": "e" })", R"({"name":"a","age":3,"email":"e"})"},
                  {"{}", R"({"age": 3})", R"({"name": "a",})", R"({"name": "a", "x": 1})",
                   R"({"age": 3, "name": "a"})"}});
  ExpectLanguage({R"({"type": "object", "properties": {"a": {"type": "integer"}}})",
                  {"{}", R"({"a": 1})"},
                  {R"({,"a": 1})", R"({"a": 1,})"}});
  // Other keys, but never one of the named ones a second time.
  ExpectLanguage({R"({"type": "object", "properties": {"ab": {"type": "integer"}},
                     "additionalProperties": {"type": "boolean"}})",
                  {"{}", R"({"ab": 1, "a": true})", R"({"abc": false})", R"({"b": true})",
                   R"({"": true})", R"({"ab": 1, "zz\n": true, "x": false})"},
                  {R"({"ab": true})", R"({"ab": 1, "ab": true})", R"({"a": 1})"}});
  ExpectLanguage({R"({"additionalProperties": true})", {"{}", R"({"x": [1]})"}, {"[]"}});
}

TEST(JsonSchemaGrammarTest, Arrays) {
  ExpectLanguage({R"({"type": "array", "items": {"type": "integer"}, "minItems": 1,
                     "maxItems": 3})",
                  {"[1]", "[1, 2]", "[1,2,3]"},
                  {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]"}});
  ExpectLanguage({R"({"type": "array", "items": {"type": "integer"}})",
                  {"[]", "[1]", "[1, 2, 3, 4, 5, 6]"},
                  {"[", "[,]"}});
  ExpectLanguage({R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": false})",
                  {"[]", R"(["a"])", R"(["a", 1])"},
                  {"[1]", R"(["a", 1, 2])"}});
  ExpectLanguage({R"({"type": "array", "prefixItems": [{"type": "string"}], "minItems": 2,
                     "items": {"type": "null"}})",
                  {R"(["a", null])", R"(["a", null, null])"},
                  {R"(["a"])", R"(["a", 1])"}});
}

TEST(JsonSchemaGrammarTest, StringLengthsAndPatterns) {
  ExpectLanguage({R"({"type": "string", "minLength": 2, "maxLength": 3})",
                  {R"("ab")", R"("abc")", R"("\n\u00e9")", "\"\xC3\xA9\xC3\xA9\""},
                  {R"("a")", R"("abcd")"}});
  ExpectLanguage({R"({"type": "string", "pattern": "^[a-z]+-\\d{2,3}$"})",
                  {R"("ab-12")", R"("x-123")"},
                  {R"("ab-1")", R"("Ab-12")", R"("ab-1234")"}});
  ExpectLanguage({R"({"pattern": "^(cat|dog)s?\\.(?:x|y)*$"})",
                  {R"("cat.")", R"("dogs.xyx")"},
                  {R"("cow.")", R"("cat")"}});
  // Characters JSON must escape come out escaped.
  ExpectLanguage({R"({"pattern": "^a\"[\\\\\\n]$"})",
                  {R"("a\"\\")", R"("a\"\n")"},
                  {"\"a\"\\\"", "\"a\\\"\n\""}});
  ExpectLanguage({R"({"pattern": "^[^a]\\s.$"})", {R"("b c")", R"("b\td")"}, {R"("a c")"}});
}

TEST(JsonSchemaGrammarTest, IntegerBounds) {
  ExpectLanguage({R"({"type": "integer", "minimum": 5, "maximum": 123})",
                  {"5", "9", "10", "99", "100", "123"},
                  {"4", "124", "200", "1000", "05", "-5"}});
  ExpectLanguage({R"({"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 2})",
                  {"-2", "-1", "0", "1"},
                  {"-3", "2", "-0"}});
  ExpectLanguage({R"({"type": "integer", "minimum": 10})",
                  {"10", "99", "100", "123456789"},
                  {"9", "0", "-10"}});
  ExpectLanguage(
      {R"({"type": "integer", "maximum": -10})", {"-10", "-11", "-12345"}, {"-9", "0", "10"}});
  ExpectLanguage({R"({"type": "integer", "maximum": 0.5})", {"0", "-7"}, {"1"}});
}

TEST(JsonSchemaGrammarTest, IntegerRangesAreExact) {
  // Every number in a window, against the arithmetic.
  for (auto [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 0}, {-37, 215}, {7, 1999}, {100, 100}, {-1000, -999}, {19, 20}}) {
    auto g = ParseGbnf("root ::= " + IntegerRangeGbnf(lo, hi));
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    GrammarDfa dfa(std::make_shared<const Grammar>(std::move(g).value()), {});
    for (int64_t v = -2100; v <= 2100; ++v) {
      ASSERT_EQ(FullMatch(dfa, std::to_string(v)), v >= lo && v <= hi)
          << v << " in [" << lo << ", " << hi << "]";
    }
  }
}

TEST(JsonSchemaGrammarTest, NumberBoundsNarrowToWholeUnits) {
  ExpectLanguage({R"({"type": "number", "minimum": 0, "maximum": 1})",
                  {"0", "1", "0.5", "0.999"},
                  {"1.5", "-0.5", "1.0", "2", "1e0"}});
  ExpectLanguage({R"({"type": "number", "minimum": -2.5, "exclusiveMaximum": 3})",
                  {"-2", "-1.5", "-0.25", "0", "1.75"},
                  {"-2.5", "-3", "3", "3.5"}});
  ExpectLanguage(
      {R"({"type": "number", "maximum": -1})", {"-1", "-1.5", "-1000.25"}, {"-0.5", "0", "-0"}});
}

TEST(JsonSchemaGrammarTest, NumberRangesStayInside) {
  // Every number of the form i + k / 4 in a window, against the arithmetic: the grammar may
  // leave some out (it narrows), never let one outside in.
  for (auto [lo, hi] :
       std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {-3, 2}, {-7, -2}, {5, 40}, {0, 0}}) {
    auto g = ParseGbnf("root ::= " + NumberRangeGbnf(lo, hi));
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    GrammarDfa dfa(std::make_shared<const Grammar>(std::move(g).value()), {});
    for (int q = -200; q <= 200; ++q) {
      const double v = q / 4.0;
      char text[32];
      std::snprintf(text, sizeof text, (q % 4) ? "%.2f" : "%.0f", v);
      const bool inside = v >= static_cast<double>(lo) && v <= static_cast<double>(hi);
      if (FullMatch(dfa, text)) {
        EXPECT_TRUE(inside) << text << " in [" << lo << ", " << hi << "]";
      }
      if (q % 4 == 0 && inside) {
        EXPECT_TRUE(FullMatch(dfa, text)) << text;
      }
    }
  }
}

TEST(JsonSchemaGrammarTest, Formats) {
  ExpectLanguage({R"({"type": "string", "format": "date"})",
                  {R"("2024-02-29")"},
                  {R"("2024-13-01")", R"("24-01-01")"}});
  ExpectLanguage({R"({"format": "time"})",
                  {R"("23:59:60Z")", R"("08:00:00.5+02:00")"},
                  {R"("24:00:00Z")", R"("08:00")"}});
  ExpectLanguage(
      {R"({"format": "date-time"})", {R"("2024-01-02T03:04:05Z")"}, {R"("2024-01-02 03:04:05Z")"}});
  ExpectLanguage({R"({"format": "uuid"})",
                  {R"("123e4567-e89b-12d3-a456-426614174000")"},
                  {R"("123e4567e89b12d3a456426614174000")"}});
  ExpectLanguage({R"({"format": "email"})",
                  {R"("a.b+c@example.co")"},
                  {R"("a@b")", R"("@example.com")", R"("a b@example.com")"}});
}

TEST(JsonSchemaGrammarTest, CombinationsAndReferences) {
  ExpectLanguage({R"({"anyOf": [{"type": "integer"}, {"type": "object",
                     "properties": {"k": {"const": 1}}, "required": ["k"]}]})",
                  {"3", R"({"k": 1})"},
                  {R"({"k": 2})", "\"3\""}});
  ExpectLanguage({R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                {"$ref": "#/$defs/b"}],
                     "$defs": {"b": {"properties": {"b": {"type": "string"}}}}})",
                  {R"({"a": 1})", R"({"a": 1, "b": "x"})"},
                  {R"({"b": "x"})"}});
  // A recursive tree.
  ExpectLanguage({R"({"$ref": "#/definitions/node", "definitions": {"node": {
                     "type": "object", "properties": {"v": {"type": "integer"},
                     "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}},
                     "required": ["v"]}}})",
                  {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]})"},
                  {R"({"v": 1, "kids": [{}]})"}});
  ExpectLanguage({R"({"type": "object", "properties": {"next": {"$ref": "#"}}})",
                  {"{}", R"({"next": {"next": {}}})"},
                  {R"({"next": 1})"}});
}

std::string ErrorOf(const std::string& schema, JsonSchemaOptions options = {}) {
  auto g = JsonSchemaToGbnf(schema, options);
  return g.ok() ? "(converted)" : g.status().ToString();
}

TEST(JsonSchemaGrammarTest, RefusalsNameTheKeywordAndPointer) {
  EXPECT_EQ(ErrorOf(R"({"type": "object", "properties": {"a": {"type": "object",
                       "minProperties": 1}}})"),
            "Unsupported: json schema: /properties/a: keyword 'minProperties' is not "
            "supported");
  EXPECT_EQ(ErrorOf(R"({"format": "uri"})"),
            "Unsupported: json schema: /format: format \"uri\" is not supported");
  EXPECT_EQ(ErrorOf(R"j({"items": {"pattern": "(?=a)"}})j"),
            "Unsupported: json schema: /items/pattern: pattern '(?=a)' at offset 1: "
            "look-around or a named group is not supported");
  EXPECT_EQ(ErrorOf(R"({"$ref": "http://x/y"})"),
            "Unsupported: json schema: /$ref: only local references ('#...') are supported, "
            "not 'http://x/y'");
  EXPECT_EQ(ErrorOf(R"({"$ref": "#/$defs/missing"})"),
            "Invalid argument: json schema: /$ref: reference '#/$defs/missing' points at nothing");
  EXPECT_EQ(ErrorOf(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
            "Invalid argument: json schema: (root): no integer lies within the bounds");
  EXPECT_EQ(ErrorOf(R"({"type": "strin"})"),
            "Invalid argument: json schema: /type: unknown type 'strin'");
  EXPECT_EQ(ErrorOf("{\"type\": "), "Invalid argument: json schema: not a valid JSON document");
  EXPECT_EQ(ErrorOf(R"({"type": "number", "minimum": 0.2, "maximum": 0.8})"),
            "Invalid argument: json schema: (root): no integer lies within the bounds");
}

TEST(JsonSchemaGrammarTest, DepthLimits) {
  JsonSchemaOptions options;
  options.max_depth = 10;
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 12; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(ErrorOf(deep, options).find("nested deeper than 10"), std::string::npos);
  // A value nested a million deep is refused before it is parsed or printed.
  const std::string bomb = R"({"const": )" + std::string(1000000, '[') + "}";
  EXPECT_NE(ErrorOf(bomb).find("nested deeper than"), std::string::npos);
}

TEST(JsonSchemaGrammarTest, AnyObject) {
  auto g = ParseGbnf(AnyJsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  GrammarDfa dfa(std::make_shared<const Grammar>(std::move(g).value()), {});
  EXPECT_TRUE(FullMatch(dfa, R"({"a": [1, 2.5, "x", true, null, {}]})"));
  EXPECT_FALSE(FullMatch(dfa, "[1]"));
  EXPECT_FALSE(FullMatch(dfa, "1"));
}

}  // namespace
}  // namespace sparrow::grammar

namespace sparrow::grammar {
namespace {

TEST(JsonSchemaGrammarTest, LongKeysBesideAdditionalPropertiesAreRefused) {
  const std::string key(1000, 'k');
  EXPECT_NE(ErrorOf(R"({"properties": {")" + key + R"(": {}}, "additionalProperties": true})")
                .find("over 256 bytes"),
            std::string::npos);
}

TEST(JsonSchemaGrammarTest, MutatedSchemasNeverCrash) {
  // Random edits of a schema using most keywords: each converts (and its grammar parses) or
  // is refused with a Status; no exception, no crash.
  const std::string base = R"({"type": "object", "properties": {
      "a": {"type": "string", "pattern": "^[a-z]{2,4}(x|y)?$"},
      "b": {"type": "integer", "minimum": -5, "exclusiveMaximum": 70},
      "c": {"type": "array", "prefixItems": [{"const": 1}], "items": {"$ref": "#/$defs/d"},
            "minItems": 1, "maxItems": 4},
      "e": {"anyOf": [{"type": "null"}, {"enum": ["x", 2]}]},
      "f": {"type": "string", "format": "date", "description": "when"}},
    "required": ["a", "c"], "additionalProperties": {"type": "boolean"},
    "$defs": {"d": {"type": ["number", "string"], "maxLength": 3}}})";
  const std::string alphabet = "{}[]\":,0123456789-aeiouxyz\\^$()|*+?.# ";
  std::mt19937 rng(43);
  int converted = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string s = testing::Mutate(base, alphabet, rng);
    auto gbnf = JsonSchemaToGbnf(s);
    if (!gbnf.ok()) {
      ASSERT_FALSE(gbnf.status().message().empty());
      continue;
    }
    auto g = ParseGbnf(*gbnf);
    ASSERT_TRUE(g.ok()) << s << "\n" << g.status().ToString() << "\n" << *gbnf;
    ++converted;
  }
  EXPECT_GT(converted, 100);
}

}  // namespace
}  // namespace sparrow::grammar
