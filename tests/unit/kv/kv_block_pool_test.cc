#include "engine/kv/kv_block_pool.h"

#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

#include "engine/kv/sequence_kv.h"
#include "tests/util/f32_kv_rows.h"

namespace sparrow {
namespace {

using testing::Key;
using testing::Value;

TEST(KvBlockPoolTest, AllocateReleaseAndExhaust) {
  KvBlockPool pool(2, 8, 4, 3);
  auto a = pool.Allocate(), b = pool.Allocate(), c = pool.Allocate();
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(pool.Allocate().has_value());
  EXPECT_EQ(pool.Stats().used_blocks, 3);
  pool.Release(*b);
  EXPECT_EQ(pool.available(), 1);
  auto d = pool.Allocate();
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, *b);
  // Block storage does not overlap between blocks, layers or offsets.
  *Key(pool, *a, 1, 3) = 1.0f;
  *Value(pool, *a, 1, 3) = 2.0f;
  EXPECT_NE(Key(pool, *a, 1, 3), Key(pool, *c, 1, 3));
  EXPECT_EQ(Key(pool, *a, 0, 1) + 8, Key(pool, *a, 0, 2));
  EXPECT_EQ(*Value(pool, *a, 1, 3), 2.0f);
}

TEST(KvBlockPoolTest, RegisteredBlocksStayCachedAndAreEvictedLru) {
  KvBlockPool pool(1, 4, 2, 2);
  auto a = *pool.Allocate();
  auto b = *pool.Allocate();
  pool.Register(a, 111);
  pool.Register(b, 222);
  pool.Release(a);
  pool.Release(b);
  KvPoolStats s = pool.Stats();
  EXPECT_EQ(s.used_blocks, 0);
  EXPECT_EQ(s.cached_blocks, 2);
  EXPECT_EQ(pool.available(), 2);
  // A hit revives the block; a miss is counted.
  auto hit = pool.Lookup(222);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, b);
  EXPECT_FALSE(pool.Lookup(333).has_value());
  EXPECT_EQ(pool.Stats().prefix_hits, 1);
  EXPECT_EQ(pool.Stats().prefix_lookups, 2);
  // Allocation evicts the least recently used cached block (a), never a referenced one.
  auto fresh = pool.Allocate();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*fresh, a);
  EXPECT_FALSE(pool.Lookup(111).has_value());
  EXPECT_FALSE(pool.Allocate().has_value());
}

TEST(SequenceKvTest, PrefixSharingBetweenSequences) {
  KvBlockPool pool(1, 2, 4, 8);
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  {
    SequenceKv first(&pool);
    EXPECT_EQ(first.AttachPrefix(prompt, 9), 0);
    ASSERT_TRUE(first.Reserve(10));
    EXPECT_EQ(first.capacity(), 12);
    Key(first, 0, 5)[0] = 42.0f;
    first.PublishFullBlocks(prompt, 10);  // blocks 0 and 1 are full
    SequenceKv second(&pool);
    EXPECT_EQ(second.AttachPrefix(prompt, 9), 8);
    EXPECT_EQ(Key(second, 0, 5)[0], 42.0f);  // same physical block
    EXPECT_EQ(pool.Stats().used_blocks, 3);
    // A different second block breaks the chain after the first block.
    std::vector<int32_t> other = {1, 2, 3, 4, 9, 9, 9, 9, 9};
    SequenceKv third(&pool);
    EXPECT_EQ(third.AttachPrefix(other, 8), 4);
  }
  // Everyone released: published blocks stay cached, nothing is in use.
  EXPECT_EQ(pool.Stats().used_blocks, 0);
  EXPECT_EQ(pool.Stats().cached_blocks, 2);
  // The match never covers the last token (it must be computed to give logits).
  SequenceKv again(&pool);
  EXPECT_EQ(again.AttachPrefix(std::vector<int32_t>(prompt.begin(), prompt.begin() + 8), 7), 4);
}

TEST(SequenceKvTest, ReserveFailsCleanlyWhenPoolIsDry) {
  KvBlockPool pool(1, 2, 4, 2);
  SequenceKv a(&pool), b(&pool);
  ASSERT_TRUE(a.Reserve(5));
  EXPECT_FALSE(b.Reserve(5));
  EXPECT_EQ(b.n_blocks(), 0);
  EXPECT_FALSE(b.Reserve(1));
  a.ReleaseAll();
  EXPECT_TRUE(b.Reserve(8));
}

TEST(SequenceKvTest, ForkSharesBlocksAndCopiesTheSharedOneOnWrite) {
  KvBlockPool pool(2, 2, 4, 8);
  SequenceKv leader(&pool);
  ASSERT_TRUE(leader.Reserve(6));  // positions 0..5: one full block and a partial one
  for (int64_t pos = 0; pos < 6; ++pos) {
    for (int64_t layer = 0; layer < 2; ++layer) {
      Key(leader, layer, pos)[1] = static_cast<float>(10 * layer + pos);
      Value(leader, layer, pos)[0] = static_cast<float>(-pos);
    }
  }
  SequenceKv member(&pool);
  member.ForkFrom(leader, 6);
  EXPECT_EQ(member.n_blocks(), 2);
  EXPECT_EQ(pool.Stats().used_blocks, 2);  // shared, not copied
  EXPECT_EQ(Key(member, 1, 5), Key(leader, 1, 5));

  // The member writes position 6, inside the shared partial block: it gets its own copy.
  ASSERT_TRUE(member.Reserve(7, 6));
  EXPECT_EQ(pool.Stats().used_blocks, 3);
  EXPECT_NE(Key(member, 1, 5), Key(leader, 1, 5));
  EXPECT_EQ(Key(member, 0, 0), Key(leader, 0, 0));  // the full block stays shared
  for (int64_t pos = 0; pos < 6; ++pos) {
    for (int64_t layer = 0; layer < 2; ++layer) {
      EXPECT_EQ(Key(member, layer, pos)[1], static_cast<float>(10 * layer + pos));
      EXPECT_EQ(Value(member, layer, pos)[0], static_cast<float>(-pos));
    }
  }
  Key(member, 0, 6)[0] = 7.0f;
  Key(leader, 0, 6)[0] = 99.0f;  // the leader's block is its own again: no copy needed
  ASSERT_TRUE(leader.Reserve(7, 6));
  EXPECT_EQ(pool.Stats().used_blocks, 3);
  EXPECT_EQ(Key(member, 0, 6)[0], 7.0f);
  EXPECT_EQ(Key(leader, 0, 6)[0], 99.0f);

  member.ReleaseAll();
  leader.ReleaseAll();
  EXPECT_EQ(pool.Stats().used_blocks, 0);
}

TEST(SequenceKvTest, CopyOnWriteNeedsAFreeBlock) {
  KvBlockPool pool(1, 2, 4, 2);
  SequenceKv leader(&pool), member(&pool);
  ASSERT_TRUE(leader.Reserve(6));
  member.ForkFrom(leader, 6);
  EXPECT_FALSE(member.Reserve(7, 6));               // no block left to copy into
  EXPECT_EQ(Key(member, 0, 5), Key(leader, 0, 5));  // unchanged, still shared
  leader.ReleaseAll();
  EXPECT_TRUE(member.Reserve(7, 6));  // the only user now: written in place
  EXPECT_EQ(pool.Stats().used_blocks, 2);
}

// Writes a value that identifies (sequence, position) into every layer's key and value.
void FillPositions(SequenceKv& kv, int64_t n_layer, int64_t from, int64_t to, float tag) {
  for (int64_t p = from; p < to; ++p) {
    for (int64_t l = 0; l < n_layer; ++l) {
      Key(kv, l, p)[0] = tag + static_cast<float>(p);
      Value(kv, l, p)[1] = -(tag + static_cast<float>(p));
    }
  }
}

void ExpectPositions(SequenceKv& kv, int64_t n_layer, int64_t from, int64_t to, float tag) {
  for (int64_t p = from; p < to; ++p) {
    for (int64_t l = 0; l < n_layer; ++l) {
      ASSERT_EQ(Key(kv, l, p)[0], tag + static_cast<float>(p)) << "layer " << l << " pos " << p;
      ASSERT_EQ(Value(kv, l, p)[1], -(tag + static_cast<float>(p)));
    }
  }
}

TEST(KvBlockPoolTest, GrowsAndHandsOutTheLowestFreeBlockFirst) {
  KvBlockPool pool(2, 4, 2, 2);
  std::unordered_map<BlockId, BlockId> moved;
  ASSERT_TRUE(pool.Resize(5, &moved).ok());
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(pool.n_blocks(), 5);
  EXPECT_EQ(pool.available(), 5);
  std::vector<BlockId> got;
  for (int i = 0; i < 5; ++i) got.push_back(*pool.Allocate());
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(pool.Allocate().has_value());
  pool.Release(3);
  pool.Release(1);
  EXPECT_EQ(*pool.Allocate(), 1);
  EXPECT_FALSE(pool.Resize(0, &moved).ok());
}

TEST(KvBlockPoolTest, ShrinkMovesBlocksInUseBelowTheEndAndTablesFollow) {
  const int64_t n_layer = 3;
  KvBlockPool pool(n_layer, 4, 2, 8);
  SequenceKv a(&pool), b(&pool), c(&pool);
  ASSERT_TRUE(a.Reserve(4));  // blocks 0, 1
  ASSERT_TRUE(b.Reserve(4));  // 2, 3
  ASSERT_TRUE(c.Reserve(6));  // 4, 5, 6
  FillPositions(a, n_layer, 0, 4, 100);
  FillPositions(b, n_layer, 0, 4, 200);
  FillPositions(c, n_layer, 0, 6, 300);
  b.ReleaseAll();  // holes at 2, 3
  std::unordered_map<BlockId, BlockId> moved;
  // 5 blocks in use: the pool cannot go under that.
  EXPECT_FALSE(pool.Resize(4, &moved).ok());
  EXPECT_EQ(pool.n_blocks(), 8);
  ASSERT_TRUE(pool.Resize(5, &moved).ok());
  EXPECT_EQ(pool.n_blocks(), 5);
  EXPECT_EQ(moved.size(), 2u);  // c's blocks 5 and 6 went into the holes
  for (const auto& [from, to] : moved) {
    EXPECT_GE(from, 5);
    EXPECT_LT(to, 5);
  }
  c.Remap(moved);
  a.Remap(moved);
  ExpectPositions(a, n_layer, 0, 4, 100);
  ExpectPositions(c, n_layer, 0, 6, 300);
  EXPECT_EQ(pool.Stats().used_blocks, 5);
  EXPECT_EQ(pool.available(), 0);
  // Released blocks come back, and the pool grows again.
  c.ReleaseAll();
  EXPECT_EQ(pool.available(), 3);
  ASSERT_TRUE(pool.Resize(8, &moved).ok());
  EXPECT_EQ(pool.available(), 6);
}

TEST(KvBlockPoolTest, ShrinkKeepsTheMostRecentlyUsedCachedPrefixesWhileRoomRemains) {
  KvBlockPool pool(1, 2, 2, 6);
  std::vector<BlockId> b;
  for (int i = 0; i < 6; ++i) b.push_back(*pool.Allocate());
  // Blocks 3, 4, 5 cached (5 used last); 0 referenced; 1, 2 free.
  for (int i = 3; i < 6; ++i) {
    *Key(pool, b[i], 0, 0) = static_cast<float>(10 * i);
    pool.Register(b[i], 1000 + i);
    pool.Release(b[i]);
  }
  pool.Release(b[1]);
  pool.Release(b[2]);
  std::unordered_map<BlockId, BlockId> moved;
  ASSERT_TRUE(pool.Resize(3, &moved).ok());
  EXPECT_TRUE(moved.empty());  // no referenced block moved
  // Two holes (1, 2) for three cached blocks: 5 and 4 stay findable, 3 is dropped.
  EXPECT_FALSE(pool.Lookup(1003).has_value());
  for (int i : {4, 5}) {
    auto hit = pool.Lookup(1000 + i);
    ASSERT_TRUE(hit) << i;
    EXPECT_LT(*hit, 3);
    EXPECT_EQ(*Key(pool, *hit, 0, 0), static_cast<float>(10 * i));
  }
  EXPECT_EQ(pool.Stats().used_blocks, 3);
}

TEST(KvBlockPoolTest, ShrinkingReturnsWholeChunks) {
  // Blocks of 2 * 4 layers * 16 positions * 1024 floats = 512 KiB: 2 to a 1 MiB chunk.
  KvBlockPool pool(4, 1024, 16, 64);
  const int64_t full = pool.Stats().mapped_bytes;
  std::unordered_map<BlockId, BlockId> moved;
  ASSERT_TRUE(pool.Resize(8, &moved).ok());
  EXPECT_EQ(pool.Stats().mapped_bytes, full / 8);
  ASSERT_TRUE(pool.Resize(64, &moved).ok());
  EXPECT_EQ(pool.Stats().mapped_bytes, full);
}

TEST(ChainBlockHashTest, DependsOnParentAndTokens) {
  const int32_t t[] = {5, 6, 7};
  EXPECT_EQ(ChainBlockHash(0, t, 3), ChainBlockHash(0, t, 3));
  EXPECT_NE(ChainBlockHash(0, t, 3), ChainBlockHash(1, t, 3));
  EXPECT_NE(ChainBlockHash(0, t, 3), ChainBlockHash(0, t, 2));
  const int32_t u[] = {5, 6, 8};
  EXPECT_NE(ChainBlockHash(0, t, 3), ChainBlockHash(0, u, 3));
}

}  // namespace
}  // namespace sparrow
