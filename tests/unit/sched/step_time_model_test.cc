#include "engine/sched/step_time_model.h"

#include <gtest/gtest.h>

namespace sparrow {
namespace {

TEST(StepTimeModelTest, WholeBudgetUntilCostsAreKnownOrNobodyDecodes) {
  StepTimeModel m(50);
  EXPECT_EQ(m.PrefillCap(8, 120), 120);  // nothing measured yet
  m.Observe(8, 0, 24);                   // 3 ms per decoded token
  EXPECT_EQ(m.PrefillCap(8, 120), 120);  // prompt cost still unknown
  m.Observe(8, 100, 24 + 150);           // 1.5 ms per prompt token
  EXPECT_DOUBLE_EQ(m.decode_ms_per_token(), 3);
  EXPECT_DOUBLE_EQ(m.prefill_ms_per_token(), 1.5);
  EXPECT_EQ(m.PrefillCap(0, 128), 128);                 // no stream waits: all the budget
  EXPECT_EQ(StepTimeModel(0).PrefillCap(8, 120), 120);  // no target
}

TEST(StepTimeModelTest, PromptFillsWhatTheTargetLeaves) {
  StepTimeModel m(50);
  m.Observe(8, 0, 24);
  m.Observe(8, 100, 174);
  // 50 ms - 8 x 3 ms = 26 ms of prompt at 1.5 ms: 17 tokens.
  EXPECT_EQ(m.PrefillCap(8, 120), 17);
  // Fewer streams, more room; never more than the budget.
  EXPECT_EQ(m.PrefillCap(2, 120), 29);
  EXPECT_EQ(m.PrefillCap(2, 10), 10);
  // Streams alone fill the target: prompts still advance by the minimum chunk.
  EXPECT_EQ(m.PrefillCap(20, 120), StepTimeModel::kMinChunk);
}

TEST(StepTimeModelTest, CostsFollowTheMachine) {
  StepTimeModel m(50);
  m.Observe(4, 0, 4);                                // 1 ms per token
  for (int i = 0; i < 40; ++i) m.Observe(4, 0, 12);  // the machine got 3x slower
  EXPECT_NEAR(m.decode_ms_per_token(), 3, 0.01);
  m.Observe(0, 0, 5);   // ignored: no work
  m.Observe(4, 0, -1);  // ignored: no time
  EXPECT_NEAR(m.decode_ms_per_token(), 3, 0.01);
}

}  // namespace
}  // namespace sparrow
