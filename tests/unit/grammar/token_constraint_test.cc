// TokenConstraint over real vocabularies: the mask equals the token-by-token answer, ends come
// only where the grammar accepts, and random walks under the mask give documents that parse
// as JSON and validate against their schema.
#include "engine/grammar/token_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_grammar.h"
#include "tests/unit/tokenizer/reference_data.h"
#include "tests/util/test_paths.h"

namespace sparrow::grammar {
namespace {

using Json = nlohmann::json;

std::shared_ptr<const Grammar> Compile(const std::string& gbnf) {
  auto g = ParseGbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

std::shared_ptr<const Grammar> CompileSchema(const std::string& schema) {
  auto g = CompileJsonSchema(schema);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

bool Bit(const TokenBitmask& bits, TokenId id) {
  return (bits[id >> 6] >> (id & 63)) & 1;
}

std::shared_ptr<const TokenTrie> SmallTrie() {
  // Ids: 0 "", 1 "{", 2 "}", 3 "{}", 4 "a", 5 "ab", 6 "b", 7 "\"", 8 "x\"", 9 eos.
  return std::make_shared<const TokenTrie>(
      TokenTrie::FromPieces({"", "{", "}", "{}", "a", "ab", "b", "\"", "x\"", "<eos>"}, {9}));
}

TEST(TokenConstraintTest, MaskFollowsTheGrammar) {
  auto c = TokenConstraint::Create(Compile(R"(root ::= "{" [ab]* "}")"), SmallTrie());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  TokenConstraint& tc = **c;
  auto bits = tc.AllowedTokens();
  ASSERT_TRUE(bits.ok());
  std::vector<TokenId> allowed;
  for (TokenId id = 0; id < 10; ++id) {
    if (Bit(**bits, id)) allowed.push_back(id);
  }
  EXPECT_EQ(allowed, (std::vector<TokenId>{1, 3}));
  EXPECT_FALSE(tc.CanEnd());
  EXPECT_EQ(tc.Accept(9).code(), StatusCode::kInvalidArgument);  // no end before the grammar
  EXPECT_EQ(tc.Accept(4).code(), StatusCode::kInvalidArgument);  // "a" cannot start
  ASSERT_TRUE(tc.Accept(1).ok());
  ASSERT_TRUE(tc.Accept(5).ok());

  std::vector<float> logits(12, 1.0f);  // two more than the vocabulary: refused too
  ASSERT_TRUE(tc.Mask(logits).ok());
  for (TokenId id = 0; id < 12; ++id) {
    const bool want = id == 2 || id == 4 || id == 5 || id == 6;
    EXPECT_EQ(std::isinf(logits[id]), !want) << id;
  }
  ASSERT_TRUE(tc.Accept(2).ok());
  EXPECT_TRUE(tc.CanEnd());
  bits = tc.AllowedTokens();
  ASSERT_TRUE(bits.ok());
  for (TokenId id = 0; id < 10; ++id) EXPECT_EQ(Bit(**bits, id), id == 9) << id;
  ASSERT_TRUE(tc.Accept(9).ok());
  EXPECT_TRUE(tc.finished());
  EXPECT_FALSE(tc.CanEnd());
  EXPECT_EQ(tc.Accept(2).code(), StatusCode::kInvalidArgument);
}

TEST(TokenConstraintTest, TokensSpanningRulesAndPartialCharacters) {
  // "x\"" ends a string and the grammar's next part at once; a 2-byte character split over
  // two byte tokens is allowed byte by byte.
  auto trie = std::make_shared<const TokenTrie>(
      TokenTrie::FromPieces({"\"", "x\"", "\xC3", "\xA9", "\xC3\xA9", "<eos>"}, {5}));
  auto c = TokenConstraint::Create(Compile(R"(root ::= "\"" [x\u00e9]+ "\"")"), trie);
  ASSERT_TRUE(c.ok());
  TokenConstraint& tc = **c;
  ASSERT_TRUE(tc.Accept(0).ok());
  EXPECT_TRUE(tc.IsAllowed(2));
  EXPECT_FALSE(tc.IsAllowed(3));
  ASSERT_TRUE(tc.Accept(2).ok());
  EXPECT_TRUE(tc.IsAllowed(3));
  EXPECT_FALSE(tc.IsAllowed(1));  // mid-character
  ASSERT_TRUE(tc.Accept(3).ok());
  ASSERT_TRUE(tc.Accept(1).ok());
  EXPECT_TRUE(tc.CanEnd());
}

// ---- A small validator for the schema subset the walks use (independent of the grammar). ----

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool Validate(const Json& v, const Json& s) {
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum")) {
    bool any = false;
    for (const Json& e : s["enum"]) any = any || e == v;
    if (!any) return false;
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const Json& alt : s["anyOf"]) any = any || Validate(v, alt);
    if (!any) return false;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_array()) {
      for (const Json& t : s["type"]) types.push_back(t);
    } else {
      types.push_back(s["type"]);
    }
    bool any = false;
    for (const std::string& t : types) {
      any = any || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
            (t == "string" && v.is_string()) || (t == "boolean" && v.is_boolean()) ||
            (t == "null" && v.is_null()) || (t == "number" && v.is_number()) ||
            (t == "integer" &&
             (v.is_number_integer() ||
              (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())));
    }
    if (!any) return false;
  }
  if (v.is_object()) {
    const Json props = s.value("properties", Json::object());
    for (const Json& r : s.value("required", Json::array())) {
      if (!v.contains(r.get<std::string>())) return false;
    }
    for (const auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        if (!Validate(value, props[key])) return false;
      } else if (s.contains("additionalProperties")) {
        const Json& add = s["additionalProperties"];
        if (add.is_boolean() ? !add.get<bool>() : !Validate(value, add)) return false;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items")) {
      for (const Json& item : v) {
        if (!Validate(item, s["items"])) return false;
      }
    }
  }
  if (v.is_string()) {
    const std::string str = v;
    if (s.contains("minLength") && CodePoints(str) < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && CodePoints(str) > s["maxLength"].get<size_t>()) return false;
    if (s.contains("pattern") &&
        !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
      return false;
    if (s.value("format", "") == "date" &&
        !std::regex_match(str, std::regex(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))"))) {
      return false;
    }
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (s.contains("minimum") && d < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && d > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && d <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && d >= s["exclusiveMaximum"].get<double>()) return false;
  }
  return true;
}

TEST(TokenConstraintTest, TheValidatorRefusesWhatItShould) {
  // The walks below are only as good as this check.
  const Json s = Json::parse(R"({"type": "object", "properties": {"n": {"type": "integer",
      "minimum": 1}, "t": {"type": "string", "maxLength": 2}}, "required": ["n"],
      "additionalProperties": false})");
  EXPECT_TRUE(Validate(Json::parse(R"({"n": 2, "t": "ab"})"), s));
  EXPECT_FALSE(Validate(Json::parse(R"({"n": 0})"), s));
  EXPECT_FALSE(Validate(Json::parse(R"({"t": "a"})"), s));
  EXPECT_FALSE(Validate(Json::parse(R"({"n": 1, "t": "abc"})"), s));
  EXPECT_FALSE(Validate(Json::parse(R"({"n": 1, "x": 1})"), s));
  EXPECT_FALSE(Validate(Json::parse(R"({"n": 1.5})"), s));
}

struct Vocabulary {
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const TokenTrie> trie;
};

Vocabulary LoadVocabulary(const std::string& name) {
  const std::string path = sparrow::testing::ModelPath(name);
  Vocabulary v;
  if (!sparrow::testing::FileExists(path)) return v;
  v.tokenizer = sparrow::testing::LoadTokenizerFromPath(path);
  if (v.tokenizer) {
    v.trie = std::make_shared<const TokenTrie>(TokenTrie::FromTokenizer(*v.tokenizer));
  }
  return v;
}

// Walks `walks` random paths through the vocabulary under the mask; every path must end (the
// schemas are finite) with a document that parses and validates. Every few steps the whole
// mask is compared with IsAllowed token by token.
void RandomWalks(const Vocabulary& vocab, const std::string& schema, int walks, uint32_t seed) {
  SCOPED_TRACE(schema);
  auto grammar = CompileSchema(schema);
  ASSERT_NE(grammar, nullptr);
  const Json parsed_schema = Json::parse(schema);
  std::mt19937 rng(seed);
  std::set<std::string> distinct;
  for (int w = 0; w < walks; ++w) {
    auto c = TokenConstraint::Create(grammar, vocab.trie);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    TokenConstraint& tc = **c;
    std::string text;
    for (int step = 0; step < 2000 && !tc.finished(); ++step) {
      auto bits = tc.AllowedTokens();
      ASSERT_TRUE(bits.ok()) << bits.status().ToString();
      std::vector<TokenId> allowed;
      for (TokenId id = 0; id < vocab.trie->vocab_size(); ++id) {
        if (Bit(**bits, id)) allowed.push_back(id);
      }
      ASSERT_FALSE(allowed.empty()) << "no token allowed after " << text;
      if (step % 7 == 0) {
        for (TokenId id = 0; id < vocab.trie->vocab_size(); ++id) {
          ASSERT_EQ(Bit(**bits, id), tc.IsAllowed(id)) << "token " << id << " after " << text;
        }
      }
      // End when allowed half of the time, so documents are not always minimal.
      TokenId pick = allowed[rng() % allowed.size()];
      if (tc.CanEnd() && rng() % 2 == 0) pick = vocab.trie->eog_ids().front();
      ASSERT_TRUE(tc.Accept(pick).ok()) << pick;
      if (!vocab.trie->IsEog(pick)) text += vocab.tokenizer->piece(pick);
    }
    ASSERT_TRUE(tc.finished()) << "walk did not end: " << text;
    const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << "not JSON: " << text;
    EXPECT_TRUE(Validate(doc, parsed_schema)) << "invalid: " << text;
    if (getenv("SPARROW_PRINT_WALKS")) fprintf(stderr, "%s\n", text.c_str());
    distinct.insert(text);
  }
  // The walks explore: not the same minimal document each time.
  EXPECT_GT(distinct.size(), static_cast<size_t>(walks / 2));
}

const char* const kWalkSchemas[] = {
    R"({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 6},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "cd"]}, "maxItems": 3},
        "ok": {"type": "boolean"}},
      "required": ["name", "age"], "additionalProperties": false})",
    R"({"type": "array", "minItems": 1, "maxItems": 4,
        "items": {"anyOf": [{"type": "integer", "exclusiveMinimum": -5, "maximum": 999},
                            {"type": "string", "pattern": "^[A-Z][a-z]{0,3}$"},
                            {"type": "null"},
                            {"type": "number", "minimum": -1.5, "maximum": 2}]}})",
    R"({"type": "object", "properties": {"when": {"type": "string", "format": "date"},
        "code": {"type": "string", "minLength": 2, "maxLength": 4},
        "n": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["when"], "additionalProperties": false})",
};

TEST(TokenConstraintTest, RandomWalksOnALargeSpmVocabValidate) {
  const Vocabulary vocab = LoadVocabulary("llama-2-tiny-random.gguf");
  if (!vocab.tokenizer) GTEST_SKIP() << "llama-2-tiny-random.gguf not found";
  ASSERT_EQ(vocab.trie->vocab_size(), 32000);
  uint32_t seed = 1;
  for (const char* schema : kWalkSchemas) RandomWalks(vocab, schema, 6, seed++);
}

TEST(TokenConstraintTest, RandomWalksOnABpeVocabValidate) {
  const Vocabulary vocab = LoadVocabulary("vocab/ggml-vocab-gpt-2.gguf");
  if (!vocab.tokenizer) GTEST_SKIP() << "ggml-vocab-gpt-2.gguf not found";
  uint32_t seed = 100;
  for (const char* schema : kWalkSchemas) RandomWalks(vocab, schema, 6, seed++);
}

TEST(TokenConstraintTest, RandomWalksOnTheTinyStoriesVocabValidate) {
  const Vocabulary vocab = LoadVocabulary("stories260K.gguf");
  if (!vocab.tokenizer) GTEST_SKIP() << "stories260K.gguf not found";
  uint32_t seed = 200;
  for (const char* schema : kWalkSchemas) RandomWalks(vocab, schema, 10, seed++);
}

}  // namespace
}  // namespace sparrow::grammar
