// A worker's blocks follow the coordinator's pool: after copy-on-write forks and a shrink that
// moves blocks, every block a sequence holds has the same contents in the mirror as in the pool.
#include "engine/shard/mirrored_kv_blocks.h"

#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/sequence_kv.h"

namespace sparrow {
namespace {

class Recorder final : public KvBlockObserver {
 public:
  explicit Recorder(MirroredKvBlocks* m) : m_(m) {}
  void OnCopy(BlockId src, BlockId dst) override {
    EXPECT_TRUE(m_->Apply({KvBlockOp::Kind::kCopy, src, dst, 0}).ok());
  }
  void OnResize(int64_t n) override {
    EXPECT_TRUE(m_->Apply({KvBlockOp::Kind::kResize, 0, 0, n}).ok());
  }

 private:
  MirroredKvBlocks* m_;
};

constexpr int64_t kLayers = 3, kDim = 4, kBlock = 4;

// Writes the same value for (layer, pos) into both views, as the two devices' forward passes
// would for their own layers.
void Write(SequenceKv& seq, MirroredSequenceKv& mirror, int64_t pos, float value) {
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t i = 0; i < kDim; ++i) {
      seq.Key(l, pos)[i] = value + l;
      seq.Value(l, pos)[i] = -value - l;
      mirror.Key(l, pos)[i] = value + l;
      mirror.Value(l, pos)[i] = -value - l;
    }
  }
}

void ExpectSame(SequenceKv& seq, MirroredKvBlocks& m, int64_t n_pos) {
  MirroredSequenceKv view(&m, seq.block_table());
  for (int64_t p = 0; p < n_pos; ++p) {
    for (int64_t l = 0; l < kLayers; ++l) {
      ASSERT_EQ(view.Key(l, p)[0], seq.Key(l, p)[0]) << "pos " << p << " layer " << l;
      ASSERT_EQ(view.Value(l, p)[kDim - 1], seq.Value(l, p)[kDim - 1]) << "pos " << p;
    }
  }
}

TEST(MirroredKvBlocksTest, FollowsForksAndShrinks) {
  KvBlockPool pool(kLayers, kDim, kBlock, 16);
  MirroredKvBlocks mirror(0, kLayers, kDim, kBlock, 16);
  Recorder rec(&mirror);
  pool.SetObserver(&rec);

  // Filler sequences take the low blocks, so that the ones that matter sit high and must move.
  SequenceKv filler(&pool);
  ASSERT_TRUE(filler.Reserve(8 * kBlock));
  SequenceKv a(&pool);
  ASSERT_TRUE(a.Reserve(10));
  MirroredSequenceKv av(&mirror, a.block_table());
  for (int64_t p = 0; p < 10; ++p) Write(a, av, p, static_cast<float>(p));

  // b shares a's 10 positions, then writes position 10 into the shared partial block: copied.
  SequenceKv b(&pool);
  b.ForkFrom(a, 10);
  ASSERT_TRUE(b.Reserve(11, 10));
  MirroredSequenceKv bv(&mirror, b.block_table());
  Write(b, bv, 10, 100.0f);
  ExpectSame(a, mirror, 10);
  ExpectSame(b, mirror, 11);

  filler.ReleaseAll();
  std::unordered_map<BlockId, BlockId> moved;
  ASSERT_TRUE(pool.Resize(5, &moved).ok());
  ASSERT_FALSE(moved.empty()) << "the test should move blocks";
  a.Remap(moved);
  b.Remap(moved);
  EXPECT_EQ(mirror.n_blocks(), 5);
  ExpectSame(a, mirror, 10);
  ExpectSame(b, mirror, 11);
}

TEST(MirroredKvBlocksTest, RefusesIdsOutsideThePool) {
  MirroredKvBlocks m(2, 4, kDim, kBlock, 4);
  EXPECT_EQ(m.Apply({KvBlockOp::Kind::kCopy, 0, 4, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Apply({KvBlockOp::Kind::kCopy, -1, 0, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Apply({KvBlockOp::Kind::kResize, 0, 0, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(m.Apply({KvBlockOp::Kind::kResize, 0, 0, 2}).ok());
  EXPECT_EQ(m.Apply({KvBlockOp::Kind::kCopy, 0, 3, 0}).code(), StatusCode::kInvalidArgument);
}

TEST(MirroredKvBlocksTest, PaysOnlyForBlocksWritten) {
  MirroredKvBlocks m(1, 3, kDim, kBlock, 1000);
  EXPECT_EQ(m.bytes(), 0);
  m.Key(7, 1, 0)[0] = 1.0f;
  m.Value(7, 2, 3)[0] = 2.0f;
  EXPECT_EQ(m.bytes(), 2 * 2 * kBlock * kDim * static_cast<int64_t>(sizeof(float)));
  EXPECT_EQ(m.Key(7, 1, 0)[0], 1.0f);
  EXPECT_EQ(m.Value(7, 2, 3)[0], 2.0f);
}

}  // namespace
}  // namespace sparrow
