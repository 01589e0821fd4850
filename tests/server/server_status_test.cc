#include "server/admin/server_status.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

// The store's counters: hot-segment and cache hits both count as found in memory.
TEST(ServerStatusTest, TheNeuronCacheRowCountsHotAndCachedBundlesAsHits) {
  NeuronStoreStats store;
  store.capacity_bytes = 2 << 20;
  store.hot_bytes = 1000;
  store.cache.held_bytes = 24;
  store.hot_hits = 50;
  store.cache.hits = 25;
  store.cache.misses = 25;
  const adminpb::NeuronCacheStatus c = NeuronCacheStatusOf(store);
  EXPECT_EQ(c.capacity_bytes(), 2 << 20);
  EXPECT_EQ(c.resident_bytes(), 1024);
  EXPECT_EQ(c.lookups(), 100);
  EXPECT_EQ(c.hits(), 75);
  ASSERT_TRUE(c.has_hit_rate());
  EXPECT_DOUBLE_EQ(c.hit_rate(), 0.75);
}

// Before the first lookup there is no rate to show (0 % would read as a cache that never hits).
TEST(ServerStatusTest, AnUnusedNeuronCacheHasNoHitRate) {
  const adminpb::NeuronCacheStatus c = NeuronCacheStatusOf(NeuronStoreStats{});
  EXPECT_EQ(c.lookups(), 0);
  EXPECT_FALSE(c.has_hit_rate());
}

}  // namespace
}  // namespace sparrow::server
