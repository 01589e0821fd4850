#include "engine/common/status.h"

#include <gtest/gtest.h>

#include "engine/common/result.h"

namespace sparrow {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgument("value " + std::to_string(x) + " is not positive");
  return x;
}

Result<int> Doubled(int x) {
  SPARROW_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Corrupt("tensor 'a' ends past the file");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.ToString(), "Corrupt: tensor 'a' ends past the file");
  EXPECT_EQ(s.WithContext("m.gguf").message(), "m.gguf: tensor 'a' ends past the file");
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Doubled(4), 8);
  Result<int> r = Doubled(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("-1"), std::string::npos);
}

}  // namespace
}  // namespace sparrow
