// MemoryBudget's arithmetic: what is fixed and what is elastic, and how a target splits among the
// consumers (the KV pool's floor, then the neuron cache, then the scratch above its floor, then
// the rest of the KV pool), so that shrinking takes the KV pool first, then the scratch, then
// the cache.
#include "engine/memory/memory_budget.h"

#include <gtest/gtest.h>

namespace sparrow {
namespace {

MemoryConsumers Consumers() {
  MemoryConsumers c;
  c.baseline_bytes = 30;
  c.weights_bytes = 500;
  c.scratch_bytes = 40;
  c.scratch_min_bytes = 10;
  c.kv_min_bytes = 100;
  c.kv_max_bytes = 400;
  c.cache_max_bytes = 200;
  return c;
}

TEST(MemoryBudgetTest, TheScratchAboveItsFloorIsElastic) {
  const MemoryBudget b(Consumers());
  EXPECT_EQ(b.fixed_bytes(), 30u + 500 + 10);
  EXPECT_EQ(b.elastic_floor(), 100u);
  EXPECT_EQ(b.elastic_ceiling(), 400u + 200 + 30);
  EXPECT_EQ(b.ceiling(), 30u + 500 + 40 + 400 + 200);
  EXPECT_EQ(b.floor(), 30u + 500 + 10 + 100);
  // Without a floor of its own the scratch is fixed, as before it was a pool.
  MemoryConsumers fixed = Consumers();
  fixed.scratch_min_bytes = UINT64_MAX;
  EXPECT_EQ(MemoryBudget(fixed).fixed_bytes(), 30u + 500 + 40);
  EXPECT_EQ(MemoryBudget(fixed).elastic_ceiling(), 600u);
}

TEST(MemoryBudgetTest, ATargetSplitsFloorThenCacheThenScratchThenKv) {
  const MemoryBudget b(Consumers());
  auto expect = [&](uint64_t elastic, uint64_t kv, uint64_t cache, uint64_t scratch) {
    const MemorySplit s = b.Split(elastic);
    EXPECT_EQ(s.kv_pool, kv) << elastic;
    EXPECT_EQ(s.neuron_cache, cache) << elastic;
    EXPECT_EQ(s.scratch, scratch) << elastic;
    EXPECT_EQ(s.baseline + s.weights, 530u);
  };
  expect(0, 100, 0, 10);        // starved: the floors
  expect(100, 100, 0, 10);      // the KV floor
  expect(250, 100, 150, 10);    // the cache next
  expect(315, 100, 200, 25);    // then the scratch
  expect(400, 170, 200, 40);    // then the KV pool
  expect(630, 400, 200, 40);    // the ceiling
  expect(10000, 400, 200, 40);  // no more than that
  EXPECT_EQ(b.Split(315).total(), b.fixed_bytes() + 315);
}

TEST(MemoryBudgetTest, TheRoomIsChargedWithTheFixedPartNotYetHeld) {
  const MemoryBudget b(Consumers());
  // 540 fixed; the process holds 400 of which 100 are the elastic part's: 300 of the fixed part
  // are held, 240 not yet.
  EXPECT_EQ(b.RoomForElastic(1000, 400, 100), 760u);
  EXPECT_EQ(b.RoomForElastic(200, 400, 100), 0u);
  EXPECT_EQ(b.RoomForElastic(1000, 2000, 100), 1000u);  // all of it held
}

TEST(MemoryBudgetTest, TheScratchEstimateCountsLogitsOnlyForTheRowsSampled) {
  ModelConfig c;
  c.n_embd = 64;
  c.n_head = 4;
  c.n_head_kv = 4;
  c.n_ff = 128;
  c.n_vocab = 1000;
  c.n_layer = 2;
  c.head_dim = 16;
  const uint64_t one_row = EstimateScratchBytes(c, 128, 256, 1);
  const uint64_t sixteen = EstimateScratchBytes(c, 128, 256, 16);
  EXPECT_EQ(sixteen - one_row, 15u * 1000 * sizeof(float));
  // Fewer tokens than rows: a row a token at most.
  EXPECT_EQ(EstimateScratchBytes(c, 4, 256, 16) - EstimateScratchBytes(c, 4, 256, 4), 0u);
  EXPECT_LT(EstimateScratchBytes(c, 32, 256, 16), sixteen);
}

}  // namespace
}  // namespace sparrow
