#include "engine/tools/bench_stats.h"

#include <gtest/gtest.h>

namespace sparrow::tools {
namespace {

TEST(Summarize, MedianMeanSpread) {
  SampleStats odd = Summarize({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.median, 3);
  EXPECT_DOUBLE_EQ(odd.mean, 3);
  EXPECT_DOUBLE_EQ(odd.stddev, 2);
  EXPECT_DOUBLE_EQ(odd.min, 1);
  EXPECT_DOUBLE_EQ(odd.max, 5);
  EXPECT_DOUBLE_EQ(Summarize({4, 1, 2, 10}).median, 3);
  EXPECT_DOUBLE_EQ(Summarize({7}).stddev, 0);
  EXPECT_DOUBLE_EQ(Summarize({}).median, 0);
}

TEST(PeakRssBytes, IsAtLeastWhatWeTouched) {
  std::vector<char> block(16 << 20, 1);
  EXPECT_GE(PeakRssBytes(), block.size());
}

}  // namespace
}  // namespace sparrow::tools
