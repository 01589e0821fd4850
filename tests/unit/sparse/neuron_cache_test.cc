// NeuronCache: the two-queue policy (entry, promotion, the 90% rule, eviction order), pins, failed
// fills, capacity, and Resize: shrinking keeps the right bundles with their bytes, gives memory
// back to the OS (RSS falls), waits for pinned bundles without blocking, and runs safely while
// another thread uses the cache.
#include "engine/sparse/neuron_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace sparrow {
namespace {

constexpr size_t kRecord = 4096;
constexpr int64_t kLayers = 2, kFf = 4096;

// Acquires `ids` of `layer`, fills misses with the neuron's pattern, checks hits carry it, and
// releases them; returns the indices that missed.
std::vector<int32_t> Touch(NeuronCache& c, int32_t layer, std::vector<int32_t> ids,
                           bool release = true) {
  std::vector<uint8_t*> rec(ids.size());
  std::vector<int32_t> misses;
  c.Acquire(layer, ids, rec.data(), &misses);
  size_t m = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (rec[k] == nullptr) continue;
    const auto pattern = static_cast<uint8_t>(ids[k] * 7 + layer * 3 + 1);
    if (m < misses.size() && misses[m] == static_cast<int32_t>(k)) {
      std::memset(rec[k], pattern, c.record_bytes());
      ++m;
    } else {
      EXPECT_EQ(rec[k][0], pattern) << "layer " << layer << " neuron " << ids[k];
      EXPECT_EQ(rec[k][c.record_bytes() - 1], pattern);
    }
  }
  if (release) c.Release(layer, ids, rec);
  return misses;
}

int64_t RssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * 4096 : -1;
}

TEST(NeuronCache, NewBundlesEnterInactiveAndAHitPromotes) {
  NeuronCache c(kLayers, kFf, kRecord, 10 * kRecord);
  EXPECT_EQ(Touch(c, 0, {0, 1, 2, 3, 4}).size(), 5u);
  NeuronCacheStats s = c.stats();
  EXPECT_EQ(s.inactive, 5);
  EXPECT_EQ(s.active, 0);
  EXPECT_EQ(s.misses, 5);
  EXPECT_TRUE(Touch(c, 0, {2}).empty());
  s = c.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.active, 1);
  EXPECT_EQ(s.inactive, 4);
  EXPECT_EQ(s.pinned, 0);
  // The same neuron id in another layer is another bundle.
  EXPECT_EQ(Touch(c, 1, {2}).size(), 1u);
}

TEST(NeuronCache, EvictionTakesTheInactiveTailFirst) {
  NeuronCache c(kLayers, kFf, kRecord, 4 * kRecord);
  Touch(c, 0, {0, 1, 2, 3});  // inactive: 3 2 1 0 (head first)
  Touch(c, 0, {1});           // active: 1
  Touch(c, 0, {4});           // evicts 0, the inactive tail
  EXPECT_FALSE(c.Contains(0, 0));
  EXPECT_TRUE(c.Contains(0, 1));
  Touch(c, 0, {5});  // evicts 2
  EXPECT_FALSE(c.Contains(0, 2));
  EXPECT_TRUE(c.Contains(0, 3));
  EXPECT_EQ(c.stats().evictions, 2);
  // Only active bundles left to evict: the active tail goes.
  Touch(c, 0, {3, 4, 5});  // all hits: active 5 4 3 1 (over 90%: the tail 1 moves to inactive)
  Touch(c, 0, {6});
  EXPECT_FALSE(c.Contains(0, 1));
  EXPECT_EQ(c.stats().used, 4);
}

TEST(NeuronCache, ActiveQueueHoldsAtMostNinetyPercent) {
  NeuronCache c(kLayers, kFf, kRecord, 20 * kRecord);
  std::vector<int32_t> ids(20);
  for (int32_t i = 0; i < 20; ++i) ids[i] = i;
  Touch(c, 0, ids);
  Touch(c, 0, ids);  // every bundle hit once more
  const NeuronCacheStats s = c.stats();
  EXPECT_EQ(s.active, 18);
  EXPECT_EQ(s.inactive, 2);
  // The two demoted are the least recently promoted: 0 and 1, next to go.
  Touch(c, 0, {100, 101});
  EXPECT_FALSE(c.Contains(0, 0));
  EXPECT_FALSE(c.Contains(0, 1));
  EXPECT_TRUE(c.Contains(0, 2));
}

TEST(NeuronCache, PinnedBundlesStayAndFailedFillsAreDropped) {
  NeuronCache c(kLayers, kFf, kRecord, 2 * kRecord);
  std::vector<int32_t> pinned = {0, 1};
  std::vector<uint8_t*> rec(2);
  std::vector<int32_t> misses;
  c.Acquire(0, pinned, rec.data(), &misses);
  ASSERT_NE(rec[0], nullptr);
  EXPECT_EQ(c.stats().pinned, 2);
  // No slot can be had: the caller reads that bundle itself.
  std::vector<int32_t> more = {2};
  std::vector<uint8_t*> rec2(1);
  misses.clear();
  c.Acquire(0, more, rec2.data(), &misses);
  EXPECT_EQ(rec2[0], nullptr);
  EXPECT_TRUE(misses.empty());
  EXPECT_EQ(c.stats().bypassed, 1);
  c.Release(0, more, rec2);
  // Neuron 1's read failed: dropped, not cached with garbage.
  const std::vector<int32_t> failed = {1};
  c.Release(0, pinned, rec, failed);
  EXPECT_TRUE(c.Contains(0, 0));
  EXPECT_FALSE(c.Contains(0, 1));
  EXPECT_EQ(c.stats().used, 1);
  EXPECT_EQ(c.stats().pinned, 0);

  NeuronCache none(kLayers, kFf, kRecord, 0);
  std::vector<uint8_t*> r(1);
  misses.clear();
  none.Acquire(0, more, r.data(), &misses);
  EXPECT_EQ(r[0], nullptr);
  EXPECT_EQ(none.stats().mapped_bytes, 0u);
}

TEST(NeuronCache, ShrinkKeepsTheHotBundlesWithTheirBytesAndUnmapsChunks) {
  const size_t chunk = 16 * kRecord;
  NeuronCache c(kLayers, kFf, kRecord, 1000 * kRecord, chunk);
  std::vector<int32_t> all(1000), hot;
  for (int32_t i = 0; i < 1000; ++i) all[i] = i;
  Touch(c, 1, all);
  for (int32_t i = 0; i < 1000; i += 20) hot.push_back(i);  // 50 bundles hit again
  Touch(c, 1, hot);
  EXPECT_EQ(c.stats().mapped_bytes, 63 * chunk);  // 1000 slots: 62.5 chunks
  EXPECT_EQ(c.stats().held_bytes, 1000 * kRecord) << "what the bundles fill, not the chunks";

  ASSERT_TRUE(c.Resize(100 * kRecord).ok());
  const NeuronCacheStats s = c.stats();
  EXPECT_EQ(s.capacity, 100);
  EXPECT_EQ(s.used, 100);
  EXPECT_EQ(s.mapped_bytes, 7 * chunk);
  EXPECT_EQ(s.held_bytes, 100 * kRecord);
  EXPECT_FALSE(s.shrink_pending);
  for (int32_t id : hot) EXPECT_TRUE(c.Contains(1, id)) << id;
  // Kept bundles moved into low slots with their bytes (Touch checks the pattern of every hit).
  EXPECT_TRUE(Touch(c, 1, hot).empty());
  // Growing again lets it fill.
  ASSERT_TRUE(c.Resize(300 * kRecord).ok());
  std::vector<int32_t> fresh;
  for (int32_t i = 2000; i < 2200; ++i) fresh.push_back(i);
  Touch(c, 1, fresh);
  EXPECT_EQ(c.stats().used, 300);
}

TEST(NeuronCache, AShrinkWaitsForPinnedBundlesWithoutBlocking) {
  const size_t chunk = 16 * kRecord;
  NeuronCache c(kLayers, kFf, kRecord, 64 * kRecord, chunk);
  std::vector<int32_t> ids(64);
  for (int32_t i = 0; i < 64; ++i) ids[i] = i;
  std::vector<uint8_t*> rec(64);
  std::vector<int32_t> misses;
  c.Acquire(0, ids, rec.data(), &misses);  // all pinned: the step in flight
  for (size_t k = 0; k < ids.size(); ++k) std::memset(rec[k], ids[k] * 7 + 1, kRecord);

  ASSERT_TRUE(c.Resize(16 * kRecord).ok());  // returns at once
  NeuronCacheStats s = c.stats();
  EXPECT_TRUE(s.shrink_pending);
  EXPECT_EQ(s.mapped_bytes, 4 * chunk);  // nothing could move yet
  for (size_t k = 0; k < ids.size(); ++k) {
    EXPECT_EQ(rec[k][0], static_cast<uint8_t>(ids[k] * 7 + 1));  // untouched
  }

  c.Release(0, ids, rec);  // the step ends: the shrink completes
  s = c.stats();
  EXPECT_FALSE(s.shrink_pending);
  EXPECT_EQ(s.used, 16);
  EXPECT_EQ(s.mapped_bytes, chunk);
  std::vector<int32_t> kept;
  for (int32_t i = 0; i < 64; ++i) {
    if (c.Contains(0, i)) kept.push_back(i);
  }
  EXPECT_EQ(kept.size(), 16u);
  EXPECT_TRUE(Touch(c, 0, kept).empty());
}

TEST(NeuronCache, RssFallsAfterAShrink) {
  const size_t record = 16 << 10;  // 8192 bundles of 16 KiB: 128 MiB
  NeuronCache c(kLayers, kFf, record, size_t{128} << 20);
  std::vector<int32_t> ids(kFf);
  for (int32_t i = 0; i < kFf; ++i) ids[i] = i;
  Touch(c, 0, ids);
  Touch(c, 1, ids);
  EXPECT_EQ(c.stats().used, kLayers * kFf);
  const int64_t full = RssBytes();
  ASSERT_GT(full, 0);
  ASSERT_TRUE(c.Resize(size_t{1} << 20).ok());
  const int64_t after = RssBytes();
  EXPECT_LT(after, full - (int64_t{100} << 20)) << "RSS " << full << " -> " << after;
  EXPECT_LE(c.stats().mapped_bytes, size_t{8} << 20);
}

TEST(NeuronCache, ResizeWhileAnotherThreadUsesTheCache) {
  NeuronCache c(kLayers, kFf, kRecord, 512 * kRecord, 32 * kRecord);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread user([&] {
    std::mt19937 rng(7);
    // A skewed stream: low ids far more often, as real activations are.
    std::geometric_distribution<int32_t> geo(0.01);
    while (!stop.load()) {
      std::vector<int32_t> ids;
      std::vector<uint8_t> seen(kFf, 0);
      for (int i = 0; i < 64; ++i) {
        const int32_t id = std::min<int32_t>(geo(rng), kFf - 1);
        if (!seen[id]) {
          seen[id] = 1;
          ids.push_back(id);
        }
      }
      Touch(c, static_cast<int32_t>(rng() % kLayers), ids);
      ++rounds;
    }
  });
  std::mt19937 rng(11);
  // At least 300 resizes, and on until the user has run 300 steps among them.
  for (int i = 0; i < 300 || rounds.load() < 300; ++i) {
    ASSERT_TRUE(c.Resize((rng() % 600) * kRecord).ok());
    std::this_thread::yield();
  }
  stop = true;
  user.join();
  const NeuronCacheStats s = c.stats();
  EXPECT_EQ(s.pinned, 0);
  EXPECT_LE(s.used, s.capacity);
  EXPECT_GT(s.hits, 0);
}

}  // namespace
}  // namespace sparrow
