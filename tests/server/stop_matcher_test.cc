#include "server/core/stop_matcher.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

std::string Feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.Push(p);
  return out + m.Flush();
}

TEST(StopMatcherTest, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.Push("hello"), "hello");
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcherTest, StopSplitAcrossPiecesIsNeverEmitted) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("abc E"), "abc ");  // "E" might start "END": held back
  EXPECT_EQ(m.Push("N"), "");
  EXPECT_EQ(m.Push("D and more"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.Push("later"), "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, HeldTextIsReleasedWhenItStopsMatching) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("xEN"), "x");
  EXPECT_EQ(m.Push("x"), "ENx");
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcherTest, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo"});
  EXPECT_EQ(Feed(m, {"hel", "lo world"}), "hel");
  EXPECT_TRUE(m.matched());
}

TEST(StopMatcherTest, FlushReturnsUnmatchedTail) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.Push("line\n"), "line");
  EXPECT_EQ(m.Flush(), "\n");
}

TEST(StopMatcherTest, EmptyStopStringsAreIgnored) {
  StopMatcher m({""});
  EXPECT_EQ(m.Push("abc"), "abc");
  EXPECT_FALSE(m.matched());
}

}  // namespace
}  // namespace sparrow::server
