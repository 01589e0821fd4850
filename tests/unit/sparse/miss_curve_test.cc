// The miss curve: replayed through the real cache, a working set that fits misses only while
// warming up; a loop larger than the cache misses every time (LRU's worst case); a skewed trace
// misses less as the cache grows, and a cache of every bundle misses only first uses. The other
// policies: LLM in a Flash's window loses the frequent neurons to a scan where the two-queue LRU
// keeps them; a hot half never misses its neurons; Belady's optimum misses what it must by hand and
// no policy misses less.
#include "engine/sparse/miss_curve.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace sparrow {
namespace {

TEST(MissCurve, AWorkingSetThatFitsStopsMissing) {
  NeuronTrace trace(2, 1000);
  const std::vector<int32_t> ids = {1, 5, 9, 13, 17, 21, 25, 29, 33, 37};
  for (int t = 0; t < 20; ++t) {
    trace.Append(0, ids);
    trace.Append(1, ids);
  }
  EXPECT_EQ(trace.tokens(), 20);
  const std::vector<double> fractions = {0.02, 0.0025};  // 40 bundles; 5 of the 20 in use
  const auto curve = ReplayMissCurve(trace, 4096, fractions, 1);
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[0].cache_bytes, 40u * 4096);
  EXPECT_EQ(curve[0].miss_rate, 0.0);
  EXPECT_EQ(curve[1].miss_rate, 1.0);  // a loop of 20 through 5 slots
  EXPECT_EQ(curve[1].misses_per_token, 20.0);
}

TEST(MissCurve, ASkewedTraceMissesLessAsTheCacheGrows) {
  const int64_t n_layer = 4, n_ff = 512;
  NeuronTrace trace(n_layer, n_ff);
  std::mt19937 rng(3);
  // Zipf-like: neuron i used with probability ~ 1 / (i + 1), about 20% of them per token.
  std::vector<double> p(n_ff);
  for (int64_t i = 0; i < n_ff; ++i) p[i] = std::min(1.0, 2.0 / static_cast<double>(i + 2));
  std::uniform_real_distribution<double> u(0, 1);
  for (int t = 0; t < 300; ++t) {
    for (int64_t l = 0; l < n_layer; ++l) {
      std::vector<int32_t> ids;
      for (int32_t i = 0; i < n_ff; ++i) {
        if (u(rng) < p[i]) ids.push_back(i);
      }
      trace.Append(l, ids);
    }
  }
  const std::vector<double> fractions = {0.05, 0.1, 0.2, 0.4, 0.7, 1.0};
  const auto curve = ReplayMissCurve(trace, 1024, fractions, 50);
  ASSERT_EQ(curve.size(), fractions.size());
  for (size_t i = 1; i < curve.size(); ++i) {
    EXPECT_LE(curve[i].miss_rate, curve[i - 1].miss_rate + 1e-9) << i;
  }
  EXPECT_GT(curve.front().miss_rate, 0.3);
  // Every bundle fits: the only misses left are first uses (rare neurons first seen late).
  std::vector<uint8_t> seen(n_layer * n_ff, 0);
  int64_t first_uses = 0, uses = 0;
  for (int64_t t = 0; t < trace.tokens(); ++t) {
    for (int64_t l = 0; l < n_layer; ++l) {
      for (int32_t id : trace.Active(t, l)) {
        const bool first = !seen[l * n_ff + id];
        seen[l * n_ff + id] = 1;
        if (t >= 50) {
          ++uses;
          first_uses += first;
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(curve.back().miss_rate, static_cast<double>(first_uses) / uses);
}

TEST(MissCurve, AScanPushesFrequentNeuronsOutOfTheWindowButNotOutOfTheTwoQueueLru) {
  // Every token: the same 10 neurons, then 10 never seen before. 15 slots.
  NeuronTrace trace(1, 4000);
  for (int t = 0; t < 100; ++t) {
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 10; ++i) ids.push_back(i);
    for (int32_t i = 0; i < 10; ++i) ids.push_back(100 + t * 10 + i);
    trace.Append(0, ids);
  }
  const std::vector<double> fractions = {15.0 / 4000};
  const auto lru = ReplayMissCurve(trace, 4096, fractions, 10, ReplayPolicy::kTwoQueueLru);
  const auto window = ReplayMissCurve(trace, 4096, fractions, 10, ReplayPolicy::kWindow);
  EXPECT_EQ(lru[0].misses_per_token, 10.0) << "only the scan misses";
  // The scan leaves 5 of the frequent ones, and reusing them in order evicts the other 5 just
  // before they are needed: recency's loop pathology, everything misses.
  EXPECT_EQ(window[0].misses_per_token, 20.0);
  // A window that holds everything misses only first uses, as the LRU does.
  const std::vector<double> all = {1.0};
  EXPECT_EQ(ReplayMissCurve(trace, 4096, all, 10, ReplayPolicy::kWindow)[0].misses_per_token, 10.0);
}

// Every token uses, in each layer, neurons 0..fixed-1 and `random` others drawn from the rest
// (`random_first`: listed before the fixed ones).
NeuronTrace FixedAndRandomTrace(int64_t n_layer, int64_t n_ff, int32_t fixed, int32_t random,
                                int tokens, unsigned seed, bool random_first = false) {
  NeuronTrace trace(n_layer, n_ff);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> other(fixed, static_cast<int32_t>(n_ff - 1));
  for (int t = 0; t < tokens; ++t) {
    for (int64_t l = 0; l < n_layer; ++l) {
      std::vector<int32_t> ids;
      for (int32_t i = 0; i < fixed; ++i) ids.push_back(i);
      std::vector<uint8_t> taken(static_cast<size_t>(n_ff), 0);
      while (static_cast<int32_t>(ids.size()) < fixed + random) {
        const int32_t id = other(rng);
        if (!taken[id]) ids.push_back(id), taken[id] = 1;
      }
      if (random_first) std::rotate(ids.begin(), ids.begin() + fixed, ids.end());
      trace.Append(l, ids);
    }
  }
  return trace;
}

TEST(MissCurve, AHotHalfNeverMissesItsNeurons) {
  // Per layer: neurons 0..19 every token, and 30 of 400 others at random. 40 slots per layer:
  // the hot half holds the 20 that are always used.
  const int64_t n_layer = 2, n_ff = 420;
  const NeuronTrace trace = FixedAndRandomTrace(n_layer, n_ff, 20, 30, 200, 5);
  const std::vector<double> fractions = {80.0 / (n_layer * n_ff)};
  const auto hot = ReplayMissCurve(trace, 4096, fractions, 20, ReplayPolicy::kHotHalfAndLru);
  EXPECT_LE(hot[0].misses_per_token, 30.0 * n_layer) << "only the random ones can miss";
  EXPECT_GT(hot[0].misses_per_token, 20.0 * n_layer) << "40 slots cannot hold 400 random ones";
}

// NeuronStore's adaptive rule, replayed: each token uses neurons 0..99, and 100 of 100..999 at
// random. A cache of 100 bundles starts as 50 hot (0..49) and an LRU of 50 slots that meets 150
// neurons a token and cycles through 0..99's second half; it finds almost nothing, so it gives
// its slots to the hot segment, which then holds 0..99: once it has, only the random ones miss.
TEST(MissCurve, AThrashingLruGivesItsSlotsToTheHotSegment) {
  // The LRU meets the random ones first, so the recency order never favours 50..99.
  const NeuronTrace trace = FixedAndRandomTrace(1, 1000, 100, 100, 80, 9, /*random_first=*/true);
  const std::vector<double> tenth = {0.1};
  const auto curve = ReplayMissCurve(trace, 4096, tenth, 40, ReplayPolicy::kHotHalfAndLru);
  EXPECT_EQ(curve[0].misses_per_token, 100.0);
}

// A hot half ranked on text the replay does not see: ten tokens use neurons 0..9, the thirty
// after them 50..59. Ranked on the whole trace the hot half holds five of 50..59 and the LRU
// the other five: nothing misses once warm. In two folds, the second half (all 50..59) is
// replayed with a hot half ranked on the first, where 0..9 and 50..59 tie and 0..4 win, so
// its LRU's five slots meet ten neurons a token; the first half's early tokens miss too.
TEST(MissCurve, AHotHalfRankedOnOtherTokensMissesWhatItDidNotSee) {
  NeuronTrace trace(1, 100);
  std::vector<int32_t> early(10), late(10);
  for (int32_t i = 0; i < 10; ++i) {
    early[i] = i;
    late[i] = 50 + i;
  }
  for (int t = 0; t < 10; ++t) trace.Append(0, early);
  for (int t = 0; t < 30; ++t) trace.Append(0, late);
  const std::vector<double> tenth = {0.1};  // 10 bundles: 5 hot, 5 in the LRU
  const auto in_sample = ReplayMissCurve(trace, 4096, tenth, 12, ReplayPolicy::kHotHalfAndLru);
  EXPECT_EQ(in_sample[0].miss_rate, 0.0);
  const auto held_out =
      ReplayMissCurve(trace, 4096, tenth, 2, ReplayPolicy::kHotHalfAndLru, /*folds=*/2);
  EXPECT_GT(held_out[0].miss_rate, 0.3);
  EXPECT_GT(held_out[0].misses_per_token, 3.0);
}

}  // namespace
}  // namespace sparrow

namespace sparrow {
namespace {

// Belady's optimum by hand: one layer, a cache of 2 bundles, accesses a b c a b d a b (one per
// token). MIN keeps a and b (used again soonest) and reads c and d without keeping them: 4
// misses, the first uses; recency alone (the window) lets c and d push a and b out, and misses
// all 8. Counted from the first token.
TEST(MissCurve, TheOptimumKeepsWhatIsUsedAgainSoonest) {
  NeuronTrace trace(1, 1000);
  for (int32_t id : {0, 1, 2, 0, 1, 3, 0, 1}) trace.Append(0, std::vector<int32_t>{id});
  const std::vector<double> two = {0.002};  // 2 bundles
  const auto best = ReplayMissCurve(trace, 4096, two, 0, ReplayPolicy::kOptimum);
  EXPECT_DOUBLE_EQ(best[0].misses_per_token, 4.0 / 8);
  const auto window = ReplayMissCurve(trace, 4096, two, 0, ReplayPolicy::kWindow);
  EXPECT_DOUBLE_EQ(window[0].misses_per_token, 8.0 / 8);
  // No room: every use is a miss; room for all: only first uses.
  EXPECT_DOUBLE_EQ(
      ReplayMissCurve(trace, 4096, std::vector<double>{0}, 0, ReplayPolicy::kOptimum)[0].miss_rate,
      1.0);
  EXPECT_DOUBLE_EQ(
      ReplayMissCurve(trace, 4096, std::vector<double>{1}, 0, ReplayPolicy::kOptimum)[0]
          .misses_per_token,
      4.0 / 8);
}

// On a skewed random trace no policy misses less than the optimum, at any size; frequency with
// decay keeps the frequent neurons through a scan of rare ones, as the window does not.
TEST(MissCurve, NoPolicyBeatsTheOptimumAndDecayedLfuResistsScans) {
  const int64_t n_layer = 3, n_ff = 400;
  NeuronTrace trace(n_layer, n_ff);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int t = 0; t < 240; ++t) {
    for (int64_t l = 0; l < n_layer; ++l) {
      std::vector<int32_t> ids;
      for (int32_t i = 0; i < n_ff; ++i) {
        const double p = t % 20 == 19 ? (i >= 200 ? 0.9 : 0.0)  // a scan of rare neurons
                                      : std::min(1.0, 3.0 / static_cast<double>(i + 3));
        if (u(rng) < p) ids.push_back(i);
      }
      trace.Append(l, ids);
    }
  }
  const std::vector<double> fractions = {0.05, 0.1, 0.25, 0.5};
  const auto best = ReplayMissCurve(trace, 1024, fractions, 40, ReplayPolicy::kOptimum);
  for (ReplayPolicy policy :
       {ReplayPolicy::kTwoQueueLru, ReplayPolicy::kWindow, ReplayPolicy::kHotHalfAndLru,
        ReplayPolicy::kDecayedLfu, ReplayPolicy::kGlobalHot}) {
    const auto curve = ReplayMissCurve(trace, 1024, fractions, 40, policy);
    for (size_t i = 0; i < fractions.size(); ++i) {
      EXPECT_LE(best[i].miss_rate, curve[i].miss_rate + 1e-12)
          << "policy " << static_cast<int>(policy) << " at " << fractions[i];
    }
  }
  const auto lfu = ReplayMissCurve(trace, 1024, fractions, 40, ReplayPolicy::kDecayedLfu);
  const auto window = ReplayMissCurve(trace, 1024, fractions, 40, ReplayPolicy::kWindow);
  EXPECT_LT(lfu[1].miss_rate, window[1].miss_rate);
  EXPECT_GT(best[1].miss_rate, 0.0);
}

}  // namespace
}  // namespace sparrow
