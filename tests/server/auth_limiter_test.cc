// AuthFailureLimiter: an address is locked after max_failures failures within the window and
// free again when its oldest one leaves it; a flood of addresses cannot grow the table past its
// bound nor make it forget the addresses that are locked.
#include "server/core/auth_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace sparrow::server {
namespace {

using Clock = AuthFailureLimiter::Clock;
using std::chrono::seconds;

TEST(AuthFailureLimiterTest, LocksAfterTheLimitUntilTheOldestFailureLeavesTheWindow) {
  AuthFailureLimiter limiter(3, seconds(60));
  const Clock::time_point t0{};
  EXPECT_FALSE(limiter.RecordFailure("10.0.0.1", t0));
  EXPECT_FALSE(limiter.RecordFailure("10.0.0.1", t0 + seconds(10)));
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", t0 + seconds(10)), 0);
  EXPECT_TRUE(limiter.RecordFailure("10.0.0.1", t0 + seconds(20)));  // the one that locks
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", t0 + seconds(20)), 40);
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.2", t0 + seconds(20)), 0);
  // The first failure leaves the window at 60 s: two remain, under the limit.
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", t0 + seconds(60)), 0);
}

TEST(AuthFailureLimiterTest, AFloodOfAddressesNeitherGrowsTheTableNorFreesTheLocked) {
  AuthFailureLimiter limiter(5, seconds(600));
  const Clock::time_point t0{};
  for (int i = 0; i < 5; ++i) limiter.RecordFailure("192.168.1.66", t0);
  for (int i = 0; i < 4; ++i) limiter.RecordFailure("192.168.1.77", t0);  // one short of a lock
  ASSERT_GT(limiter.RetryAfterSeconds("192.168.1.66", t0), 0);
  // One and a half times the table's size of IPv6 addresses, one failure each, in the window.
  const size_t flood = AuthFailureLimiter::kMaxAddresses * 3 / 2;
  for (size_t i = 0; i < flood; ++i) {
    limiter.RecordFailure("fd00::" + std::to_string(i), t0 + seconds(1));
  }
  EXPECT_LE(limiter.tracked_addresses(), AuthFailureLimiter::kMaxAddresses);
  EXPECT_GT(limiter.RetryAfterSeconds("192.168.1.66", t0 + seconds(2)), 0);
  // The address one failure short is still counted: its next failure locks it.
  EXPECT_TRUE(limiter.RecordFailure("192.168.1.77", t0 + seconds(2)));
}

TEST(AuthFailureLimiterTest, WhenEveryTrackedAddressIsLockedTheSoonestToEndIsForgotten) {
  AuthFailureLimiter limiter(1, seconds(600));
  const Clock::time_point t0{};
  for (size_t i = 0; i < AuthFailureLimiter::kMaxAddresses; ++i) {
    limiter.RecordFailure("fd00::" + std::to_string(i),
                          t0 + std::chrono::milliseconds(static_cast<int64_t>(i)));
  }
  const Clock::time_point now = t0 + seconds(10);
  ASSERT_GT(limiter.RetryAfterSeconds("fd00::0", now), 0);
  EXPECT_TRUE(limiter.RecordFailure("fd01::1", now));
  EXPECT_EQ(limiter.tracked_addresses(), AuthFailureLimiter::kMaxAddresses);
  EXPECT_EQ(limiter.RetryAfterSeconds("fd00::0", now), 0);  // its lock would have ended first
  EXPECT_GT(limiter.RetryAfterSeconds("fd00::1", now), 0);
  EXPECT_GT(limiter.RetryAfterSeconds("fd01::1", now), 0);
}

}  // namespace
}  // namespace sparrow::server
