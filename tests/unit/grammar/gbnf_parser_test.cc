#include "engine/grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/unit/grammar/grammar_test_util.h"

namespace sparrow::grammar {
namespace {

std::string ErrorOf(std::string_view gbnf, const GrammarLimits& limits = {}) {
  auto g = ParseGbnf(gbnf, limits);
  if (g.ok()) return "(parsed)";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(GbnfParserTest, ParsesLlamaServersJsonGrammar) {
  // The layout of llama.cpp's grammars/json.gbnf: rules over several lines, comments.
  constexpr std::string_view kJson = R"(# a JSON value
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";
  auto g = ParseGbnf(kJson);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->name(g->root()), "root");
}

TEST(GbnfParserTest, ErrorsNameLineAndColumn) {
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nfoo := \"b\""),
            "grammar: line 2, column 5: unexpected character ':'");
  EXPECT_EQ(ErrorOf("foo bar ::= \"b\""),
            "grammar: line 1, column 5: expected '::=' after rule name 'foo'");
  EXPECT_EQ(ErrorOf("root ::= \"abc"), "grammar: line 1, column 10: unterminated string literal");
  EXPECT_EQ(ErrorOf("root ::= [a-"), "grammar: line 1, column 10: unterminated character class");
  EXPECT_EQ(ErrorOf("root ::= x\n  | y"),
            "grammar: line 1, column 10: rule 'x' is used but never defined");
  EXPECT_EQ(ErrorOf("root ::= (\"a\" | \"b\""), "grammar: line 1, column 20: expected ')'");
  EXPECT_EQ(ErrorOf("root ::= \"a\" )"), "grammar: line 1, column 14: unmatched ')'");
  EXPECT_EQ(ErrorOf("root ::= * \"a\""), "grammar: line 1, column 10: '*' has nothing to repeat");
  EXPECT_EQ(ErrorOf("root ::= \"\\q\""), "grammar: line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(ErrorOf("root ::= [z-a]"),
            "grammar: line 1, column 13: character range ends before it starts");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{3,2}"),
            "grammar: line 1, column 18: repetition maximum is below its minimum");
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nroot ::= \"b\""),
            "grammar: line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(ErrorOf("\n\n   @"), "grammar: line 3, column 4: expected a rule name");
  EXPECT_EQ(ErrorOf("# only a comment\n"), "grammar: line 2, column 1: the grammar has no rules");
  EXPECT_EQ(ErrorOf("a ::= \"x\""), "grammar: there is no rule named 'root' to start from");
  EXPECT_EQ(ErrorOf("root ::= \"\\u12\""), "grammar: line 1, column 15: expected 4 hex digits");
  EXPECT_EQ(ErrorOf("root ::= [^\\x00-\\U0010FFFF]"),
            "grammar: line 1, column 28: the character class matches no character");
}

TEST(GbnfParserTest, RefusesLeftRecursion) {
  EXPECT_EQ(ErrorOf("root ::= root \"a\" | \"b\""),
            "grammar: rule 'root' is left recursive (it can reach itself before any character)");
  // Through a rule that can match nothing.
  EXPECT_NE(ErrorOf("root ::= e x\nx ::= root \"a\" | \"b\"\ne ::= \"c\"?").find("left recursive"),
            std::string::npos);
  // Recursion after a character is fine.
  EXPECT_EQ(ErrorOf("root ::= \"(\" root \")\" | \"x\""), "(parsed)");
}

TEST(GbnfParserTest, LimitsAreRefusedNotRun) {
  GrammarLimits limits;
  limits.max_nesting = 8;
  std::string deep = "root ::= " + std::string(20, '(') + "\"a\"" + std::string(20, ')');
  EXPECT_NE(ErrorOf(deep, limits).find("nested deeper than 8"), std::string::npos);
  // A million parentheses must not overflow the C++ stack with the default limits either.
  std::string huge = "root ::= " + std::string(1000000, '(');
  EXPECT_NE(ErrorOf(huge).find("nested deeper"), std::string::npos);

  EXPECT_NE(ErrorOf("root ::= \"a\"{99999}").find("above the limit"), std::string::npos);
  limits = {};
  limits.max_symbols = 1000;
  EXPECT_NE(ErrorOf("root ::= (\"a\"{0,900}){0,900}", limits).find("symbols"), std::string::npos);
  limits = {};
  limits.max_text_bytes = 10;
  EXPECT_NE(ErrorOf("root ::= \"aaaaaa\"", limits).find("limit of 10"), std::string::npos);
}

TEST(GbnfParserTest, RefusesInvalidUtf8) {
  EXPECT_NE(ErrorOf("root ::= \"\xC3\"").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xED\xA0\x80\"").find("invalid UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace sparrow::grammar

namespace sparrow::grammar {
namespace {

std::string RuleName(int i) {
  std::string name = "r";
  name += std::to_string(i);
  return name;
}

TEST(GbnfParserTest, LongChainsCompileInLinearTime) {
  // r0 ::= r1, r1 ::= r2, ... each nullable only through the next: a fixed point over all
  // rules would need one pass per rule (quadratic); this must finish at once.
  constexpr int kRules = 40000;
  std::string chain = "root ::= r0 \"x\"\n";
  for (int i = 0; i < kRules; ++i) {
    chain += RuleName(i) + " ::= " + RuleName(i + 1) + "\n";
  }
  const std::string last = RuleName(kRules) + " ::= ";
  auto parsed = ParseGbnf(chain + last + "\"\"\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  // The same chain closed into a loop is left recursion.
  auto looped = ParseGbnf(chain + last + "r0 | \"\"\n");
  ASSERT_FALSE(looped.ok());
  EXPECT_NE(looped.status().message().find("left recursive"), std::string::npos);
}

TEST(GbnfParserTest, MutatedGrammarsNeverCrash) {
  // Random edits of a valid grammar: each parses or is refused with a message, never worse.
  const std::string base =
      "root ::= obj\nobj ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\n"
      "pair ::= str ws \":\" ws [0-9]{1,3}\nstr ::= \"\\\"\" [^\"\\\\\\x00-\\x1F]* \"\\\"\"\n"
      "ws ::= [ \\t\\n]* # spaces\n";
  const std::string alphabet = "()[]{}|*+?.\"\\^-,:=# \n\tazAZ09\x80\xC3\xA9";
  std::mt19937 rng(42);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string g = testing::Mutate(base, alphabet, rng);
    auto r = ParseGbnf(g);
    if (r.ok()) {
      ++parsed;
    } else {
      ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << g;
      ASSERT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(parsed, 100);  // the edits were not all fatal: both paths ran
}

}  // namespace
}  // namespace sparrow::grammar
