#include "server/core/api_key.h"

#include <gtest/gtest.h>

#include <string_view>

namespace sparrow::server {
namespace {

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("secret-key", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("secret-key", "secret-kez"));
  EXPECT_FALSE(ConstantTimeEquals("secret-key", "secret-ke"));
  EXPECT_FALSE(ConstantTimeEquals("secret", "secret-key"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(BearerKeyMatchesTest, NeedsTheSchemeAndTheExactKey) {
  EXPECT_TRUE(BearerKeyMatches("Bearer abc", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Bearer abd", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Bearer abcd", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Bearer ab", "abc"));
  // RFC 7235: the scheme is case-insensitive and one or more spaces follow it.
  EXPECT_TRUE(BearerKeyMatches("bearer abc", "abc"));
  EXPECT_TRUE(BearerKeyMatches("BEARER   abc", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Bearerabc", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Basic abc", "abc"));
  EXPECT_FALSE(BearerKeyMatches("abc", "abc"));
  EXPECT_FALSE(BearerKeyMatches("", "abc"));
  EXPECT_FALSE(BearerKeyMatches("Bearer ", ""));  // an empty key never matches
}

}  // namespace
}  // namespace sparrow::server
