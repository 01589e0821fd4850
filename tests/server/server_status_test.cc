#include "server/admin/server_status.h"

#include <gtest/gtest.h>

namespace sparrow::server {
namespace {

using json = nlohmann::json;

// A dense model without memory control: no cache row and no budget bounds, rather than zeros an
// operator would take for real numbers (budget_bytes stays, null, as before).
TEST(ServerStatusTest, NoNeuronCacheAndNoGovernorLeaveTheirFieldsOut) {
  ServerStatus s;
  s.ffn_mode = "dense";
  s.rss_bytes = 12345;
  const json j = StatusJson(s);
  EXPECT_EQ(j["sparse"], (json{{"mode", "dense"}, {"active_fraction", 1.0}}));
  EXPECT_EQ(j["memory"], (json{{"rss_bytes", 12345}, {"budget_bytes", nullptr}})) << j.dump();
}

// The store's counters: hot-segment and cache hits both count as found in memory.
TEST(ServerStatusTest, TheNeuronCacheRowCountsHotAndCachedBundlesAsHits) {
  NeuronStoreStats store;
  store.capacity_bytes = 2 << 20;
  store.hot_bytes = 1000;
  store.cache.held_bytes = 24;
  store.hot_hits = 50;
  store.cache.hits = 25;
  store.cache.misses = 25;
  const NeuronCacheStatus c = NeuronCacheStatusOf(store);
  EXPECT_EQ(c.capacity_bytes, 2 << 20);
  EXPECT_EQ(c.resident_bytes, 1024);
  EXPECT_EQ(c.lookups, 100);
  EXPECT_EQ(c.hits, 75);

  ServerStatus s;
  s.neuron_cache = c;
  const json j = StatusJson(s)["sparse"]["neuron_cache"];
  EXPECT_EQ(j["capacity_bytes"], 2 << 20);
  EXPECT_EQ(j["resident_bytes"], 1024);
  EXPECT_EQ(j["lookups"], 100);
  EXPECT_EQ(j["hits"], 75);
  EXPECT_DOUBLE_EQ(j["hit_rate"].get<double>(), 0.75);
}

// Before the first lookup there is no rate to show (0 % would read as a cache that never hits).
TEST(ServerStatusTest, AnUnusedNeuronCacheHasNoHitRate) {
  ServerStatus s;
  s.neuron_cache = NeuronCacheStatusOf(NeuronStoreStats{});
  const json j = StatusJson(s)["sparse"]["neuron_cache"];
  EXPECT_EQ(j["lookups"], 0);
  EXPECT_FALSE(j.contains("hit_rate")) << j.dump();
}

// With a memory governor: the budget, its ceiling and floor, and the operator's budget only
// while one is set.
TEST(ServerStatusTest, AGovernorAddsTheBudgetItsBoundsAndTheOperatorsBudget) {
  ServerStatus s;
  s.budget_bytes = 300;
  s.ceiling_bytes = 400;
  s.floor_bytes = 100;
  json m = StatusJson(s)["memory"];
  EXPECT_EQ(m["budget_bytes"], 300);
  EXPECT_EQ(m["ceiling_bytes"], 400);
  EXPECT_EQ(m["floor_bytes"], 100);
  EXPECT_FALSE(m.contains("operator_budget_bytes")) << m.dump();
  s.operator_budget_bytes = 300;
  m = StatusJson(s)["memory"];
  EXPECT_EQ(m["operator_budget_bytes"], 300);
}

}  // namespace
}  // namespace sparrow::server
