// BudgetPolicy's decisions, level by level, on a clock the test moves: shrink at once, act again
// only after the repeat interval, grow back in steps after a quiet spell, obey the operator,
// never go under the floor, and say when the floor itself does not fit.
#include "engine/memory/budget_policy.h"

#include <gtest/gtest.h>

namespace sparrow {
namespace {

constexpr uint64_t kMiB = 1 << 20;

BudgetPolicyOptions Options() {
  BudgetPolicyOptions o;
  o.ceiling_bytes = 1000 * kMiB;
  o.floor_bytes = 100 * kMiB;
  o.repeat_ms = 1000;
  o.quiet_ms = 10000;
  o.grow_every_ms = 2000;
  o.grow_fraction = 0.10;
  return o;
}

TEST(BudgetPolicyTest, StartsAtTheCeiling) {
  BudgetPolicy p(Options());
  EXPECT_EQ(p.target(), 1000 * kMiB);
  EXPECT_EQ(p.level(0), PressureLevel::kNone);
  EXPECT_FALSE(p.OnTick(100000)) << "nothing to grow";
  EXPECT_FALSE(p.starved(0));
}

TEST(BudgetPolicyTest, StartsAtWhatTheDeviceOfferedAndGrowsOnlyIntoRoom) {
  BudgetPolicyOptions o = Options();
  o.start_bytes = 300 * kMiB;
  BudgetPolicy p(o);
  EXPECT_EQ(p.target(), 300 * kMiB);
  EXPECT_FALSE(p.OnTick(100000, 0, 300 * kMiB)) << "no room, no growth";
  auto c = p.OnTick(102000, 50 * kMiB, 300 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 350 * kMiB) << "a step, at most the room";
  o.start_bytes = 10 * kMiB;
  EXPECT_EQ(BudgetPolicy(o).target(), 100 * kMiB) << "never under the floor";
  o.start_bytes = 5000 * kMiB;
  EXPECT_EQ(BudgetPolicy(o).target(), 1000 * kMiB) << "never over the ceiling";
}

TEST(BudgetPolicyTest, EachLevelShrinksByItsOwnMeasure) {
  BudgetPolicy p(Options());
  auto c = p.OnPressure(PressureLevel::kLow, "cgroup-v1: low", 1000);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 800 * kMiB);
  EXPECT_EQ(c->cause, "cgroup-v1: low");
  c = p.OnPressure(PressureLevel::kMedium, "psi: some", 1100);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 400 * kMiB);
  EXPECT_EQ(p.level(1100), PressureLevel::kMedium);
  c = p.OnPressure(PressureLevel::kCritical, "psi: full", 1200);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 100 * kMiB) << "critical goes to the floor at once";
  EXPECT_FALSE(p.OnPressure(PressureLevel::kCritical, "psi: full", 5000)) << "already there";
  EXPECT_EQ(p.level(5000), PressureLevel::kCritical);
}

TEST(BudgetPolicyTest, AStepTakesItsShareOfWhatIsHeldNotOfTheTarget) {
  BudgetPolicy p(Options());
  // 1000 MiB allowed, 300 MiB really held (a KV pool mostly never written): low gives back a
  // fifth of the 300, medium half of what low left.
  auto c = p.OnPressure(PressureLevel::kLow, "cgroup-v1: low", 1000, 300 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 240 * kMiB);
  c = p.OnPressure(PressureLevel::kMedium, "psi: some", 1100, 280 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 120 * kMiB) << "half of the target, which is under what is held";
  c = p.OnPressure(PressureLevel::kMedium, "psi: some", 2200, 20 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 100 * kMiB) << "never under the floor";
}

TEST(BudgetPolicyTest, ALevelActsAgainOnlyAfterTheRepeatInterval) {
  BudgetPolicy p(Options());
  ASSERT_TRUE(p.OnPressure(PressureLevel::kMedium, "a", 1000));
  EXPECT_FALSE(p.OnPressure(PressureLevel::kMedium, "a", 1500)) << "the same spell";
  EXPECT_EQ(p.target(), 500 * kMiB);
  auto c = p.OnPressure(PressureLevel::kMedium, "a", 2000);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 250 * kMiB);
  // Halving stops at the floor.
  ASSERT_TRUE(p.OnPressure(PressureLevel::kMedium, "a", 3000));
  EXPECT_EQ(p.target(), 125 * kMiB);
  ASSERT_TRUE(p.OnPressure(PressureLevel::kMedium, "a", 4000));
  EXPECT_EQ(p.target(), 100 * kMiB);
  EXPECT_FALSE(p.OnPressure(PressureLevel::kMedium, "a", 5000));
}

TEST(BudgetPolicyTest, GrowingBackTakesNoMoreThanTheRoomTheSourcesSee) {
  BudgetPolicy p(Options());
  ASSERT_TRUE(p.OnPressure(PressureLevel::kCritical, "x", 1000));
  // Another process still holds what it took: 30 MiB free over the sources' margin.
  auto c = p.OnTick(11000, 30 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 130 * kMiB);
  EXPECT_FALSE(p.OnTick(13000, 0)) << "no room, no growth";
  c = p.OnTick(13100, 500 * kMiB);
  ASSERT_TRUE(c) << "the room came back: the step waited for it, not for another interval";
  EXPECT_EQ(c->bytes, 230 * kMiB) << "a whole step (a tenth of the ceiling) at most";
}

TEST(BudgetPolicyTest, GrowingBackCountsWhatWasGrantedAndIsNotYetHeld) {
  BudgetPolicy p(Options());
  ASSERT_TRUE(p.OnPressure(PressureLevel::kCritical, "x", 1000));
  // 60 MiB free over the margin; the consumers hold all of their 100 MiB.
  auto c = p.OnTick(11000, 60 * kMiB, 100 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 160 * kMiB);
  // Two seconds on, the cache has filled only 10 of its new 60 MiB, so the room still reads
  // 50 MiB: all of it is spoken for.
  EXPECT_FALSE(p.OnTick(13000, 50 * kMiB, 110 * kMiB)) << "the room backs what was granted";
  // Filled to 150: 10 MiB of the room is left after the 10 still to come.
  c = p.OnTick(15000, 20 * kMiB, 150 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 170 * kMiB);
  // Without a room reading nothing limits the step.
  c = p.OnTick(17000, std::nullopt, 100 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 270 * kMiB);
}

TEST(BudgetPolicyTest, ATargetTheRoomCannotBackIsLowered) {
  BudgetPolicy p(Options());
  // 300 MiB held and 50 MiB of room: the other 650 MiB of the target would be filled past the
  // limit (the squeeze test's OOM: events stopped while the cache refilled a stale target).
  auto c = p.OnTick(1000, 50 * kMiB, 300 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 350 * kMiB);
  EXPECT_NE(c->cause.find("headroom"), std::string::npos) << c->cause;
  EXPECT_EQ(p.level(1000), PressureLevel::kLow);
  EXPECT_FALSE(p.OnTick(1500, 0, 300 * kMiB)) << "once per repeat interval";
  EXPECT_FALSE(p.OnTick(2100, 0, 340 * kMiB)) << "within the slack (a fiftieth of the ceiling)";
  c = p.OnTick(2100, 0, 300 * kMiB);
  ASSERT_TRUE(c) << "another process took the room";
  EXPECT_EQ(c->bytes, 300 * kMiB);
  EXPECT_FALSE(p.OnTick(5000, 100 * kMiB, 300 * kMiB)) << "growth waits for a quiet spell";
  c = p.OnTick(12200, 100 * kMiB, 300 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 400 * kMiB) << "then grows by a step the room covers";
  c = p.OnTick(13300, 0, 20 * kMiB);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 100 * kMiB) << "never under the floor";
  EXPECT_FALSE(p.OnTick(14400, 0, 20 * kMiB)) << "at the floor: the events take over";
  EXPECT_FALSE(p.OnTick(20000, std::nullopt, 20 * kMiB)) << "no room reading, no clamp";
}

TEST(BudgetPolicyTest, GrowsBackInStepsAfterAQuietSpell) {
  BudgetPolicy p(Options());
  ASSERT_TRUE(p.OnPressure(PressureLevel::kCritical, "x", 1000));
  EXPECT_FALSE(p.OnTick(2000));
  EXPECT_FALSE(p.OnTick(10999)) << "not quiet long enough";
  auto c = p.OnTick(11000);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 200 * kMiB);
  EXPECT_FALSE(p.OnTick(12000)) << "one step per grow interval";
  ASSERT_TRUE(p.OnTick(13000));
  EXPECT_EQ(p.target(), 300 * kMiB);
  // A signal in the middle stops the growth and restarts the quiet spell.
  ASSERT_TRUE(p.OnPressure(PressureLevel::kLow, "x", 14000));
  EXPECT_EQ(p.target(), 240 * kMiB);
  EXPECT_FALSE(p.OnTick(20000));
  EXPECT_EQ(p.level(20000), PressureLevel::kLow);
  uint64_t now = 24000;
  while (p.OnTick(now)) now += 2000;
  EXPECT_EQ(p.target(), 1000 * kMiB) << "back at the ceiling, never past it";
  EXPECT_EQ(p.level(now), PressureLevel::kNone);
}

TEST(BudgetPolicyTest, TheOperatorsLimitAppliesAtOnceAndCapsGrowth) {
  BudgetPolicy p(Options());
  auto c = p.SetOperatorLimit(300 * kMiB, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 300 * kMiB);
  EXPECT_NE(c->cause.find("operator"), std::string::npos);
  EXPECT_FALSE(p.OnTick(100000)) << "already at the operator's cap";
  // Pressure still shrinks under the operator's limit.
  ASSERT_TRUE(p.OnPressure(PressureLevel::kMedium, "x", 200000));
  EXPECT_EQ(p.target(), 150 * kMiB);
  uint64_t now = 220000;
  while (p.OnTick(now)) now += 2000;
  EXPECT_EQ(p.target(), 300 * kMiB);
  // Cleared with nothing heard lately: the ceiling at once.
  auto g = p.SetOperatorLimit(std::nullopt, now);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->bytes, 1000 * kMiB);
  // Raised during pressure: only down now, up after the quiet spell.
  ASSERT_TRUE(p.OnPressure(PressureLevel::kMedium, "x", now + 1000));
  EXPECT_EQ(p.target(), 500 * kMiB);
  EXPECT_FALSE(p.SetOperatorLimit(800 * kMiB, now + 2000));
  EXPECT_EQ(p.target(), 500 * kMiB);
  ASSERT_TRUE(p.SetOperatorLimit(200 * kMiB, now + 3000));
  EXPECT_EQ(p.target(), 200 * kMiB);
  EXPECT_FALSE(p.SetOperatorLimit(std::nullopt, now + 4000));
  ASSERT_TRUE(p.OnTick(now + 11000));
  EXPECT_EQ(p.target(), 300 * kMiB) << "growing back a step at a time";
}

TEST(BudgetPolicyTest, StarvedWhenEvenTheFloorDoesNotFit) {
  BudgetPolicy p(Options());
  auto c = p.SetOperatorLimit(50 * kMiB, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 100 * kMiB) << "never under the floor";
  EXPECT_TRUE(p.starved(0));
  ASSERT_TRUE(p.SetOperatorLimit(std::nullopt, 0));
  EXPECT_FALSE(p.starved(0));
  ASSERT_TRUE(p.OnPressure(PressureLevel::kCritical, "psi", 1000));
  EXPECT_EQ(p.target(), 100 * kMiB);
  EXPECT_FALSE(p.OnPressure(PressureLevel::kCritical, "psi", 2500)) << "at the floor already";
  EXPECT_TRUE(p.starved(2500)) << "critical at the floor";
  EXPECT_TRUE(p.starved(12499));
  EXPECT_FALSE(p.starved(12500)) << "quiet again";
}

}  // namespace
}  // namespace sparrow
