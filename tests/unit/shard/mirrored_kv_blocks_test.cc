// A worker's blocks follow the coordinator's pool: after copy-on-write forks and a shrink that
// moves blocks, every block a sequence holds has the same contents in the mirror as in the pool.
#include "engine/shard/mirrored_kv_blocks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/sequence_kv.h"
#include "tests/util/f32_kv_rows.h"

namespace sparrow {
namespace {

using testing::Key;
using testing::Value;

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
      Key(seq, l, pos)[i] = value + l;
      Value(seq, l, pos)[i] = -value - l;
      Key(mirror, l, pos)[i] = value + l;
      Value(mirror, l, pos)[i] = -value - l;
    }
  }
}

void ExpectSame(SequenceKv& seq, MirroredKvBlocks& m, int64_t n_pos) {
  MirroredSequenceKv view(&m, seq.block_table());
  for (int64_t p = 0; p < n_pos; ++p) {
    for (int64_t l = 0; l < kLayers; ++l) {
      ASSERT_EQ(Key(view, l, p)[0], Key(seq, l, p)[0]) << "pos " << p << " layer " << l;
      ASSERT_EQ(Value(view, l, p)[kDim - 1], Value(seq, l, p)[kDim - 1]) << "pos " << p;
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
  Key(m, 7, 1, 0)[0] = 1.0f;
  Value(m, 7, 2, 3)[0] = 2.0f;
  EXPECT_EQ(m.bytes(), 2 * 2 * kBlock * kDim * static_cast<int64_t>(sizeof(float)));
  EXPECT_EQ(Key(m, 7, 1, 0)[0], 1.0f);
  EXPECT_EQ(Value(m, 7, 2, 3)[0], 2.0f);
}

// In the coordinator's types a mirrored block holds the pool's bytes for its layers, and the
// copies the pool reports (copy-on-write) carry the stored rows whole.
TEST(MirroredKvBlocksTest, TypedBlocksMirrorThePoolsBytes) {
  constexpr int64_t kDim32 = 32;
  const KvTypes types{TensorType::kQ8_0, TensorType::kF16};
  KvBlockPool pool(kLayers, kDim32, kBlock, 8, types);
  MirroredKvBlocks mirror(1, kLayers, kDim32, kBlock, 8, types);
  EXPECT_EQ(mirror.types(), types);
  Recorder rec(&mirror);
  pool.SetObserver(&rec);
  SequenceKv leader(&pool);
  ASSERT_TRUE(leader.Reserve(6));
  std::vector<float> row(kDim32);
  for (int64_t p = 0; p < 6; ++p) {
    MirroredSequenceKv view(&mirror, leader.block_table());
    for (int64_t i = 0; i < kDim32; ++i) row[i] = 0.1f * static_cast<float>(p * kDim32 + i);
    for (int64_t l = 0; l < kLayers; ++l) {
      StoreKvRow(types.k, row.data(), leader.KeyRow(l, p), kDim32);
      StoreKvRow(types.v, row.data(), leader.ValueRow(l, p), kDim32);
      if (l >= 1) {
        StoreKvRow(types.k, row.data(), view.KeyRow(l, p), kDim32);
        StoreKvRow(types.v, row.data(), view.ValueRow(l, p), kDim32);
      }
    }
  }
  // Two blocks written: (layers 1..2) x 4 positions x (34 + 64 bytes).
  EXPECT_EQ(mirror.bytes(), 2 * (kLayers - 1) * kBlock * (34 + 64));
  SequenceKv member(&pool);
  member.ForkFrom(leader, 6);
  ASSERT_TRUE(member.Reserve(7, 6));  // copy-on-write of the partial block, mirrored
  MirroredSequenceKv view(&mirror, member.block_table());
  for (int64_t p = 0; p < 6; ++p) {
    for (int64_t l = 1; l < kLayers; ++l) {
      ASSERT_EQ(std::memcmp(view.KeyRow(l, p), member.KeyRow(l, p), 34), 0) << "pos " << p;
      ASSERT_EQ(std::memcmp(view.ValueRow(l, p), member.ValueRow(l, p), 64), 0) << "pos " << p;
    }
  }
  pool.SetObserver(nullptr);
}

}  // namespace
}  // namespace sparrow
