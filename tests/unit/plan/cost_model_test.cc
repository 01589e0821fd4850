// The cost model's parts on the hand inputs (plan_fixture.h), and the hardware profile's lookups
// (flash rate by block size and depth, a kernel table for a type that was not measured).
#include "engine/plan/cost_model.h"

#include <gtest/gtest.h>

#include "tests/unit/plan/plan_fixture.h"

namespace sparrow::plan {
namespace {

using testing::HandInputs;
using testing::kMiBytes;

TEST(CostModelTest, PartsMatchTheHandArithmetic) {
  const PlanInputs in = HandInputs();
  const PlanLevel& half = in.levels[0];
  EXPECT_NEAR(DenseSeconds(in, 1, half), 1e-3, 1e-12);
  EXPECT_NEAR(DenseSeconds(in, 2, half), 0.5e-3, 1e-12);
  EXPECT_NEAR(FfnComputeSeconds(in, 2, half), 0.25e-3, 1e-12);
  EXPECT_NEAR(FlashSeconds(in, in.cache[0], half), 2.048e-3, 1e-12);
  EXPECT_NEAR(FlashBytesPerToken(in, in.cache[1], half), 500 * 0.2 * 4096, 1e-6);
  const TokenCost c = Evaluate(in, 2, in.cache[1], half, 2000000);
  // The reads hide the rows in memory; the missed fifth is computed after them.
  EXPECT_NEAR(c.token_s, 0.5e-3 + 0.4096e-3 + 0.2 * 0.25e-3, 1e-12);
  EXPECT_EQ(c.memory_bytes, 11000000u + 2048000u + 2000000u);
}

TEST(CostModelTest, SmallRecordsCostAWholeBlockPerRead) {
  PlanInputs in = HandInputs();
  in.record_bytes = 512;  // an O_DIRECT read still moves 4 KiB
  EXPECT_EQ(ReadBytes(in), 4096u);
  EXPECT_NEAR(FlashSeconds(in, in.cache[0], in.levels[0]), 2.048e-3, 1e-12);
}

// The store's measured cost per neuron is charged to each active neuron of a converted model
// (500 a layer here), never to a mapped one.
TEST(CostModelTest, TheStoresCostPerNeuronAddsToAConvertedModelsFfn) {
  PlanInputs in = HandInputs();
  in.hw.store_seconds_per_neuron = 100e-9;
  EXPECT_NEAR(FfnComputeSeconds(in, 2, in.levels[0]), 0.25e-3 + 500 * 100e-9, 1e-12);
  in.converted = false;
  EXPECT_NEAR(FfnComputeSeconds(in, 2, in.levels[0]), 0.25e-3, 1e-12);
}

TEST(CostModelTest, AModelNotConvertedNeverReadsFlash) {
  PlanInputs in = HandInputs();
  in.converted = false;
  EXPECT_EQ(FlashSeconds(in, in.cache[0], in.levels[0]), 0);
}

TEST(HardwareProfileTest, FlashRateInterpolatesInLogBlockSizeAndLogDepth) {
  HardwareProfile hw = testing::TwoThreadHardware();
  hw.flash = {{4096, 1, 100}, {16384, 1, 300}, {4096, 32, 200}, {16384, 32, 600}};
  // 8 KiB is halfway between 4 and 16 KiB in log size.
  EXPECT_NEAR(hw.FlashBytesPerSecond(8192, 1), 200 * kMiBytes, 1e-3);
  // Deeper than measured: the deepest measured; between depths, linear in log(depth) (8 is 3/5
  // of the way from 1 to 32).
  EXPECT_NEAR(hw.FlashBytesPerSecond(8192, 128), 400 * kMiBytes, 1e-3);
  EXPECT_NEAR(hw.FlashBytesPerSecond(4096, 8), 160 * kMiBytes, 1e-3);
  // Clamped at the ends.
  EXPECT_NEAR(hw.FlashBytesPerSecond(1 << 20, 32), 600 * kMiBytes, 1e-3);
  EXPECT_NEAR(hw.FlashBytesPerSecond(512, 32), 200 * kMiBytes, 1e-3);
  EXPECT_NEAR(hw.FlashBytesPerSecond(4096, 0.5), 100 * kMiBytes, 1e-3);
}

TEST(CostModelTest, ALayerWithFewMissesReadsAtTheShallowEndOfTheCurve) {
  PlanInputs in = HandInputs();
  in.io_queue_depth = 128;
  in.hw.flash = {{4096, 1, 100}, {4096, 8, 400}, {4096, 128, 800}};
  // No cache: 500 reads of 4 KiB a layer, more than the store keeps in flight: its depth.
  EXPECT_NEAR(FlashSeconds(in, in.cache[0], in.levels[0]), 500 * 4096 / (800 * kMiBytes), 1e-12);
  // Four misses a layer (500 * 0.008): two thirds of the way from depth 1 to 8 in log(depth).
  const double rate = 100 + (400 - 100) * 2.0 / 3.0;
  EXPECT_NEAR(FlashSeconds(in, {0.9, 0.008}, in.levels[0]), 4 * 4096 / (rate * kMiBytes), 1e-12);
}

TEST(HardwareProfileTest, UnmeasuredTypeTakesTheClosestInBytesPerWeight) {
  HardwareProfile hw = testing::TwoThreadHardware();
  hw.kernels.push_back({TensorType::kF16, {5e9, 6e9}, {4e9, 4e9}});
  EXPECT_EQ(hw.Kernel(TensorType::kQ4_K)->type, TensorType::kQ4_0);  // 4.5 bits against 4.5
  EXPECT_EQ(hw.Kernel(TensorType::kBF16)->type, TensorType::kF16);
  EXPECT_DOUBLE_EQ(hw.DenseRate(TensorType::kF16, 2), 6e9);
  EXPECT_DOUBLE_EQ(hw.DenseRate(TensorType::kF16, 9), 6e9);  // clamped to the table
}

}  // namespace
}  // namespace sparrow::plan
