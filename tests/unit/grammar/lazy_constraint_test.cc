// LazyConstraint and PrefixGbnfRules: output is free until the trigger (as text across tokens,
// as a control token, or with bytes after it inside one token), then the grammar holds; and a
// grammar whose rule names were prefixed matches what the original does.
#include "engine/grammar/lazy_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_compose.h"
#include "engine/grammar/json_schema_grammar.h"
#include "tests/unit/grammar/grammar_test_util.h"

namespace sparrow::grammar {
namespace {

// Ids: 0 "", 1 "<", 2 "go>", 3 "hi", 4 "x", 5 "y", 6 "<go>x", 7 eos, 8 control "<go>".
std::shared_ptr<const TokenTrie> Trie() {
  return std::make_shared<const TokenTrie>(
      TokenTrie::FromPieces({"", "<", "go>", "hi", "x", "y", "<go>x", "<eos>", ""}, {7}));
}

std::unique_ptr<LazyConstraint> Lazy(std::vector<TokenId> ids = {}) {
  auto c = TokenConstraint::Create(testing::MustParse(R"(root ::= "x"+ "y")"), Trie());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::make_unique<LazyConstraint>(std::move(c).value(), "<go>", std::move(ids));
}

int Allowed(LazyConstraint& c, TokenId id) {
  std::vector<float> logits(9, 0.0f);
  EXPECT_TRUE(c.Mask(logits).ok());
  return std::isfinite(logits[id]) ? 1 : 0;
}

TEST(LazyConstraintTest, FreeUntilTheTriggerTextThenTheGrammar) {
  auto c = Lazy();
  EXPECT_EQ(Allowed(*c, 3), 1);  // "hi" before the trigger
  ASSERT_TRUE(c->Accept(3).ok());
  ASSERT_TRUE(c->Accept(1).ok());  // "<"
  EXPECT_FALSE(c->triggered());
  ASSERT_TRUE(c->Accept(2).ok());  // "go>": the trigger spans two tokens
  EXPECT_TRUE(c->triggered());
  EXPECT_EQ(Allowed(*c, 3), 0);
  EXPECT_EQ(Allowed(*c, 4), 1);
  EXPECT_EQ(Allowed(*c, 7), 0);  // no end before the grammar is whole
  ASSERT_TRUE(c->Accept(4).ok());
  ASSERT_TRUE(c->Accept(5).ok());
  EXPECT_TRUE(c->Complete());
}

TEST(LazyConstraintTest, BytesAfterTheTriggerInOneTokenGoToTheGrammar) {
  auto c = Lazy();
  ASSERT_TRUE(c->Accept(6).ok());  // "<go>x"
  EXPECT_TRUE(c->triggered());
  ASSERT_TRUE(c->Accept(5).ok());  // "y": complete, so the "x" counted
  EXPECT_TRUE(c->Complete());
}

TEST(LazyConstraintTest, AControlTokenTriggersByItsId) {
  auto c = Lazy({8});
  ASSERT_TRUE(c->Accept(8).ok());
  EXPECT_TRUE(c->triggered());
  EXPECT_FALSE(c->Accept(3).ok());  // "hi" is not in the grammar
}

TEST(LazyConstraintTest, AnEndBeforeTheTriggerIsFree) {
  auto c = Lazy();
  EXPECT_EQ(Allowed(*c, 7), 1);
  EXPECT_TRUE(c->Accept(7).ok());
  EXPECT_FALSE(c->Complete());
}

TEST(GbnfComposeTest, PrefixedRulesMatchTheSame) {
  const std::string gbnf = AnyJsonObjectGbnf();
  const std::string prefixed = PrefixGbnfRules(gbnf, "t3-");
  EXPECT_NE(prefixed.find("t3-root ::= t3-json-object"), std::string::npos) << prefixed;
  // Literals, classes and counts are left alone.
  EXPECT_NE(prefixed.find("[ \\t]{0,8}"), std::string::npos) << prefixed;
  auto g = testing::MustParse("root ::= t3-root\n" + prefixed);
  ASSERT_NE(g, nullptr) << prefixed;
  GrammarDfa dfa(g, {});
  EXPECT_TRUE(testing::FullMatch(dfa, R"({"a": [1, "x", {"b": null}]})"));
  EXPECT_FALSE(testing::FullMatch(dfa, R"({"a": })"));
}

}  // namespace
}  // namespace sparrow::grammar
