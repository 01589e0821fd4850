// HotLruRule: an LRU part that thrashes gives its bytes to the hot segment; while given away a
// ghost of it counts what it would find, and the share comes back when that is one lookup in
// five; a stream the ghost cannot hold keeps it away; a window ends after 16 tokens' layer calls.
#include "engine/sparse/hot_lru_rule.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace sparrow {
namespace {

constexpr int64_t kLayers = 2, kNeurons = 1000, kWindow = 16 * kLayers;

// One window of calls on a rule whose LRU is in use: each call looks up `lookups`, finds `hits`.
std::optional<double> LruWindow(HotLruRule& r, int64_t lookups, int64_t hits, int64_t slots) {
  std::optional<double> out;
  for (int64_t i = 0; i < kWindow; ++i) {
    r.CountLru(lookups, hits);
    if (auto s = r.EndCall(slots, true)) out = s;
  }
  return out;
}

// Thrashes `r` (configured 0.5) so that its LRU is given away.
void GiveAway(HotLruRule& r) {
  ASSERT_EQ(LruWindow(r, 100, 1, 50), std::optional<double>(1.0));
  ASSERT_TRUE(r.given_away());
}

TEST(HotLruRuleTest, AThrashingLruGivesItsBytesAwayAndAHealthyOneKeepsThem) {
  HotLruRule healthy(kLayers, kNeurons, 0.5);
  EXPECT_FALSE(LruWindow(healthy, 100, 30, 50));
  EXPECT_EQ(healthy.share(), 0.5);
  HotLruRule thrashing(kLayers, kNeurons, 0.5);
  for (int64_t i = 0; i + 1 < kWindow; ++i) {
    thrashing.CountLru(100, 1);
    EXPECT_FALSE(thrashing.EndCall(50, true)) << "not before the window ends";
  }
  thrashing.CountLru(100, 1);
  EXPECT_EQ(thrashing.EndCall(50, true), std::optional<double>(1.0));
  EXPECT_EQ(thrashing.last_lookups(), 100 * kWindow);
  EXPECT_EQ(thrashing.last_hits(), kWindow);
  // Not full yet (still filling after a resize): not thrashing.
  HotLruRule filling(kLayers, kNeurons, 0.5);
  for (int64_t i = 0; i < kWindow; ++i) {
    filling.CountLru(100, 1);
    EXPECT_FALSE(filling.EndCall(50, false));
  }
  // A configured share of 1 has nothing to give.
  HotLruRule all_hot(kLayers, kNeurons, 1.0);
  EXPECT_FALSE(LruWindow(all_hot, 100, 1, 50));
}

TEST(HotLruRuleTest, TheShareComesBackWhenTheGhostWouldHitAgain) {
  HotLruRule r(kLayers, kNeurons, 0.5);
  GiveAway(r);
  // The same 40 neurons of each layer, token after token: a ghost of 100 slots holds them all.
  std::vector<int32_t> working(40);
  std::iota(working.begin(), working.end(), 500);
  std::optional<double> back;
  for (int64_t i = 0; i < kWindow && !back; ++i) {
    r.CountGhost(static_cast<int32_t>(i % kLayers), working, 100);
    back = r.EndCall(0, false);
  }
  EXPECT_EQ(back, std::optional<double>(0.5));
  EXPECT_FALSE(r.given_away());
  EXPECT_EQ(r.last_lookups(), 40 * kWindow);
  EXPECT_EQ(r.last_hits(), 40 * (kWindow - kLayers)) << "all but each layer's first call";
}

TEST(HotLruRuleTest, AStreamTheGhostCannotHoldKeepsTheLruAway) {
  HotLruRule r(kLayers, kNeurons, 0.5);
  GiveAway(r);
  // 200 different neurons a call, cycling through all 1000: a ghost of 100 slots never hits.
  std::vector<int32_t> ids(200);
  for (int64_t w = 0; w < 3; ++w) {
    for (int64_t i = 0; i < kWindow; ++i) {
      std::iota(ids.begin(), ids.end(), static_cast<int32_t>((i * 200) % kNeurons));
      r.CountGhost(static_cast<int32_t>(i % kLayers), ids, 100);
      EXPECT_FALSE(r.EndCall(0, false));
    }
  }
  EXPECT_TRUE(r.given_away());
  EXPECT_EQ(r.last_hits(), 0);
  // Taken back, then thrashing again: given away again (the ghost starts empty).
  HotLruRule again(kLayers, kNeurons, 0.5);
  GiveAway(again);
  std::vector<int32_t> one = {7};
  for (int64_t i = 0; i < kWindow; ++i) {
    again.CountGhost(0, one, 10);
    (void)again.EndCall(0, false);
  }
  ASSERT_FALSE(again.given_away());
  GiveAway(again);
}

}  // namespace
}  // namespace sparrow
