// SequenceKv::Truncate: the rollback of rejected draft positions (speculative decoding). Blocks
// past the kept positions go back to the pool; blocks another sequence shares (a cached prefix,
// a fork's copy-on-write source) keep their contents and their other owners.
#include <gtest/gtest.h>

#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/sequence_kv.h"
#include "tests/util/f32_kv_rows.h"

namespace sparrow {
namespace {

using testing::Key;
using testing::Value;

TEST(SequenceKvRollbackTest, TruncateFreesTheBlocksPastTheKeptPositions) {
  KvBlockPool pool(2, 4, 4, 8);
  SequenceKv seq(&pool);
  ASSERT_TRUE(seq.Reserve(6));  // a decoding sequence: 2 blocks
  for (int64_t pos = 0; pos < 6; ++pos) Key(seq, 1, pos)[0] = static_cast<float>(pos);
  // A verify step of 8 draft tokens at positions 6..13: 4 blocks.
  ASSERT_TRUE(seq.Reserve(14, 5));
  for (int64_t pos = 6; pos < 14; ++pos) Key(seq, 1, pos)[0] = 100.0f + pos;
  EXPECT_EQ(seq.n_blocks(), 4);
  EXPECT_EQ(pool.Stats().used_blocks, 4);
  // Two drafts accepted: positions [0, 8) stay.
  seq.Truncate(8);
  EXPECT_EQ(seq.n_blocks(), 2);
  EXPECT_EQ(seq.capacity(), 8);
  EXPECT_EQ(pool.Stats().used_blocks, 2);
  EXPECT_EQ(pool.available(), 6);
  for (int64_t pos = 0; pos < 6; ++pos) EXPECT_EQ(Key(seq, 1, pos)[0], pos);
  EXPECT_EQ(Key(seq, 1, 7)[0], 107.0f);
  // Nothing accepted past a block boundary keeps the partial block; 0 keeps nothing.
  seq.Truncate(5);
  EXPECT_EQ(seq.n_blocks(), 2);
  seq.Truncate(4);
  EXPECT_EQ(seq.n_blocks(), 1);
  seq.Truncate(0);
  EXPECT_EQ(seq.n_blocks(), 0);
  EXPECT_EQ(pool.Stats().used_blocks, 0);
}

TEST(SequenceKvRollbackTest, ASharedPrefixIsUntouchedByTheRollback) {
  KvBlockPool pool(1, 2, 4, 8);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  SequenceKv first(&pool);
  ASSERT_TRUE(first.Reserve(9));
  for (int64_t pos = 0; pos < 9; ++pos) Value(first, 0, pos)[1] = 10.0f + pos;
  first.PublishFullBlocks(prompt, 9);  // blocks 0 and 1
  SequenceKv second(&pool);
  ASSERT_EQ(second.AttachPrefix(prompt, 8), 8);
  ASSERT_TRUE(second.Reserve(9 + 6, 8));  // the last prompt token and 6 drafts
  EXPECT_EQ(second.n_blocks(), 4);
  for (int64_t pos = 8; pos < 15; ++pos) Value(second, 0, pos)[1] = -1.0f;
  second.Truncate(10);
  EXPECT_EQ(second.n_blocks(), 3);
  // The two prefix blocks are still the first sequence's and the cache's, contents intact.
  EXPECT_EQ(pool.refs(first.block_table()[0]), 2);
  EXPECT_EQ(pool.refs(first.block_table()[1]), 2);
  EXPECT_EQ(second.block_table()[1], first.block_table()[1]);
  for (int64_t pos = 0; pos < 9; ++pos) EXPECT_EQ(Value(first, 0, pos)[1], 10.0f + pos) << pos;
  // The cut blocks are free: only first's 3 and second's private one remain in use.
  EXPECT_EQ(pool.Stats().used_blocks, 4);
  SequenceKv third(&pool);
  EXPECT_EQ(third.AttachPrefix(prompt, 8), 8);
}

TEST(SequenceKvRollbackTest, AForkRollsBackItsCopyAndLeavesTheSourceAlone) {
  KvBlockPool pool(1, 2, 4, 8);
  SequenceKv leader(&pool);
  ASSERT_TRUE(leader.Reserve(6));
  for (int64_t pos = 0; pos < 6; ++pos) Key(leader, 0, pos)[0] = static_cast<float>(pos);
  SequenceKv fork(&pool);
  fork.ForkFrom(leader, 6);  // the partial block 1 is shared
  const BlockId shared = leader.block_table()[1];
  ASSERT_EQ(pool.refs(shared), 2);
  // The fork verifies 4 drafts from position 5: block 1 is copied before it is written.
  ASSERT_TRUE(fork.Reserve(10, 5));
  EXPECT_NE(fork.block_table()[1], shared);
  EXPECT_EQ(pool.refs(shared), 1);
  for (int64_t pos = 5; pos < 10; ++pos) Key(fork, 0, pos)[0] = -7.0f;
  fork.Truncate(7);
  EXPECT_EQ(fork.n_blocks(), 2);
  EXPECT_EQ(fork.block_table()[0], leader.block_table()[0]);
  for (int64_t pos = 0; pos < 6; ++pos) EXPECT_EQ(Key(leader, 0, pos)[0], pos) << pos;
  EXPECT_EQ(pool.Stats().used_blocks, 3);
}

TEST(SequenceKvRollbackDeathTest, CuttingAPublishedBlockIsABrokenInvariant) {
  KvBlockPool pool(1, 2, 4, 4);
  SequenceKv seq(&pool);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  ASSERT_TRUE(seq.Reserve(5));
  seq.PublishFullBlocks(tokens, 5);
  EXPECT_DEATH(seq.Truncate(3), "");
}

}  // namespace
}  // namespace sparrow
