// The byte-level matcher on GBNF grammars: accepts exactly the strings of the language.
#include <gtest/gtest.h>

#include "engine/grammar/grammar_dfa.h"
#include "tests/unit/grammar/grammar_test_util.h"

namespace sparrow::grammar {
namespace {

using testing::FullMatch;
using testing::LivePrefix;
using testing::MustParse;

struct Case {
  const char* gbnf;
  std::vector<std::string> accept, reject;
};

TEST(GrammarMatcherTest, LanguagesMatchExactly) {
  const std::vector<Case> cases = {
      {R"(root ::= "ab" | "cd")", {"ab", "cd"}, {"", "a", "abcd", "ac"}},
      {R"(root ::= "a"* "b")", {"b", "ab", "aaaab"}, {"", "a", "ba", "abb"}},
      {R"(root ::= ("ab")+)", {"ab", "abab"}, {"", "a", "aba"}},
      {R"(root ::= "x"? "y")", {"y", "xy"}, {"xxy", "x"}},
      {R"(root ::= [0-9]{2,4})", {"12", "123", "1234"}, {"1", "12345", "1a"}},
      {R"(root ::= [0-9]{3})", {"123"}, {"12", "1234"}},
      {R"(root ::= "a"{2,})", {"aa", "aaaaaa"}, {"a", ""}},
      {R"(root ::= "a"{,2})", {"", "a", "aa"}, {"aaa"}},
      {R"(root ::= [^a-c]+)", {"d", "xyz", "\xC3\xA9", "\xF0\x9F\x98\x80"}, {"a", "xb", "\xC3"}},
      {R"(root ::= .)", {"a", "\xE2\x82\xAC"}, {"", "ab", "\xE2\x82", "\xC0\x80", "\xED\xA0\x80"}},
      {R"(root ::= "\u00e9\x41\n\"")",
       {"\xC3\xA9"
        "A\n\""},
       {"eA\n\""}},
      {R"(root ::= [\u00e0-\u00ff])", {"\xC3\xA0", "\xC3\xBF"}, {"\xC3\x9F", "a"}},
      {"root ::= \"(\" root \")\" | \"\"", {"", "()", "((()))"}, {"(()", ")("}},
      {"root ::= item (\",\" item)*\nitem ::= [a-z]+ # words\n", {"a", "ab,c,def"}, {"a,", ",a"}},
      {"root ::= e \"x\"\ne ::= \"\" | \"e\"", {"x", "ex"}, {"eex"}},
  };
  for (const Case& c : cases) {
    auto g = ParseGbnf(c.gbnf);
    ASSERT_TRUE(g.ok()) << c.gbnf << ": " << g.status().ToString();
    GrammarDfa dfa(std::make_shared<const Grammar>(std::move(g).value()), {});
    for (const std::string& s : c.accept) EXPECT_TRUE(FullMatch(dfa, s)) << c.gbnf << " on " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(FullMatch(dfa, s)) << c.gbnf << " on " << s;
  }
}

TEST(GrammarMatcherTest, PrefixesOfMatchesStayLive) {
  GrammarDfa dfa(MustParse(R"(root ::= "{" [a-z]* "}")"), {});
  EXPECT_TRUE(LivePrefix(dfa, "{ab"));
  EXPECT_FALSE(LivePrefix(dfa, "{aB"));
  EXPECT_FALSE(dfa.Accepts(dfa.initial()));
}

TEST(GrammarMatcherTest, LongRepetitionKeepsStacksFlat) {
  // 5000 items through a star and a tail-recursive rule: the stacks never grow.
  MatcherLimits limits;
  limits.max_stack_depth = 8;
  GrammarDfa dfa(MustParse("root ::= (\"a\" | \"b\")* tail\ntail ::= \"c\" tail | \"d\""), limits);
  EXPECT_TRUE(FullMatch(dfa, std::string(5000, 'a') + std::string(5000, 'c') + "d"));
}

TEST(GrammarMatcherTest, NestingPastTheDepthLimitIsRefused) {
  MatcherLimits limits;
  limits.max_stack_depth = 20;
  GrammarDfa dfa(MustParse("root ::= \"(\" root \")\" | \"x\""), limits);
  EXPECT_TRUE(FullMatch(dfa, "((x))"));
  EXPECT_FALSE(LivePrefix(dfa, std::string(100, '(')));
  EXPECT_FALSE(dfa.overflowed());  // a too deep stack is dropped, not an overflow
}

TEST(GrammarMatcherTest, AmbiguityPastTheStackLimitOverflows) {
  MatcherLimits limits;
  limits.max_stacks = 16;
  GrammarDfa dfa(MustParse("root ::= x*\nx ::= \"a\" | \"a\" y\ny ::= \"a\"*"), limits);
  GrammarDfa::StateId s = dfa.initial();
  for (int i = 0; i < 100 && s != GrammarDfa::kDead; ++i) s = dfa.Step(s, 'a');
  // Ambiguous but the stacks are deduplicated: this grammar stays small.
  EXPECT_NE(s, GrammarDfa::kDead);
  GrammarDfa blowup(MustParse("root ::= (\"a\" | \"a\" \"a\")* \"b\" | \"a\" root \"c\""), limits);
  s = blowup.initial();
  for (int i = 0; i < 100 && s != GrammarDfa::kDead; ++i) s = blowup.Step(s, 'a');
  EXPECT_EQ(s, GrammarDfa::kDead);
  EXPECT_TRUE(blowup.overflowed());
}

TEST(GrammarMatcherTest, CompactKeepsTheState) {
  GrammarDfa dfa(MustParse("root ::= \"[\" [0-9]* \"]\""), {});
  GrammarDfa::StateId s = dfa.initial();
  for (char c : std::string("[123")) s = dfa.Step(s, static_cast<uint8_t>(c));
  ASSERT_NE(s, GrammarDfa::kDead);
  s = dfa.Compact(s);
  EXPECT_EQ(dfa.state_count(), 2u);  // the kept state and the initial one
  s = dfa.Step(s, '4');
  s = dfa.Step(s, ']');
  ASSERT_NE(s, GrammarDfa::kDead);
  EXPECT_TRUE(dfa.Accepts(s));
  EXPECT_TRUE(FullMatch(dfa, "[9]"));
}

}  // namespace
}  // namespace sparrow::grammar
