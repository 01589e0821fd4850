// The paged pool with keys and values stored as f16 and q8_0: a block takes the bytes of its
// type, and forks, copy-on-write, prefix reuse and shrinks carry the stored rows byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/kv/sequence_kv.h"

namespace sparrow {
namespace {

constexpr int64_t kLayers = 2, kDim = 64, kBlock = 4;

class TypedKvPoolTest : public ::testing::TestWithParam<KvTypes> {};

std::string Name(const ::testing::TestParamInfo<KvTypes>& info) {
  return std::string(TensorTypeName(info.param.k)) + "_" +
         std::string(TensorTypeName(info.param.v));
}

// A row that identifies (tag, layer, pos), stored in the cache's types.
std::vector<float> RowOf(float tag, int64_t layer, int64_t pos) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * tag + 10 * layer + pos));
  std::normal_distribution<float> nd;
  std::vector<float> x(kDim);
  for (float& v : x) v = nd(rng);
  return x;
}

void Fill(KvCache& kv, int64_t from, int64_t to, float tag) {
  for (int64_t p = from; p < to; ++p) {
    for (int64_t l = 0; l < kLayers; ++l) {
      StoreKvRow(kv.types().k, RowOf(tag, l, p).data(), kv.KeyRow(l, p), kDim);
      StoreKvRow(kv.types().v, RowOf(-tag, l, p).data(), kv.ValueRow(l, p), kDim);
    }
  }
}

// The rows Fill wrote, compared as stored bytes, and close to what was written.
void Expect(KvCache& kv, int64_t from, int64_t to, float tag) {
  const KvTypes t = kv.types();
  std::vector<uint8_t> k(KvRowBytes(t.k, kDim)), v(KvRowBytes(t.v, kDim));
  std::vector<float> back(kDim);
  for (int64_t p = from; p < to; ++p) {
    for (int64_t l = 0; l < kLayers; ++l) {
      const std::vector<float> want = RowOf(tag, l, p);
      StoreKvRow(t.k, want.data(), k.data(), kDim);
      StoreKvRow(t.v, RowOf(-tag, l, p).data(), v.data(), kDim);
      ASSERT_EQ(std::memcmp(kv.KeyRow(l, p), k.data(), k.size()), 0)
          << "layer " << l << " pos " << p;
      ASSERT_EQ(std::memcmp(kv.ValueRow(l, p), v.data(), v.size()), 0) << "pos " << p;
      kernels::DequantizeRow(t.k, kv.KeyRow(l, p), back.data(), kDim);
      const float tol = t.k == TensorType::kQ4_0 ? 0.6f : 0.03f;  // a q4_0 step: amax / 8
      for (int64_t i = 0; i < kDim; ++i) ASSERT_NEAR(back[i], want[i], tol);
    }
  }
}

TEST_P(TypedKvPoolTest, BlockBytesFollowTheTypes) {
  const KvTypes t = GetParam();
  const int64_t row = static_cast<int64_t>(KvRowBytes(t.k, kDim) + KvRowBytes(t.v, kDim));
  EXPECT_EQ(KvBlockPool::BlockBytes(kLayers, kDim, kBlock, t), kLayers * kBlock * row);
  // f32 4 bytes an element, f16 2, q8_0 34 per 32: the KJV model's 6 layers of 128 take
  // 6,144 bytes a position in f32, 3,072 in f16 and 1,632 in q8_0 (llama.cpp's figures).
  EXPECT_EQ(KvBlockPool::BlockBytes(6, 128, 1, {TensorType::kF32, TensorType::kF32}), 6144);
  EXPECT_EQ(KvBlockPool::BlockBytes(6, 128, 1, kF16Kv), 3072);
  EXPECT_EQ(KvBlockPool::BlockBytes(6, 128, 1, {TensorType::kQ8_0, TensorType::kQ8_0}), 1632);
  KvBlockPool pool(kLayers, kDim, kBlock, 8, t);
  EXPECT_EQ(pool.types(), t);
  SequenceKv a(&pool);
  ASSERT_TRUE(a.Reserve(kBlock));
  EXPECT_EQ(a.KeyRow(0, 1) - a.KeyRow(0, 0), static_cast<ptrdiff_t>(KvRowBytes(t.k, kDim)));
  EXPECT_EQ(a.ValueRow(1, 1) - a.ValueRow(1, 0), static_cast<ptrdiff_t>(KvRowBytes(t.v, kDim)));
}

TEST_P(TypedKvPoolTest, ForkAndCopyOnWriteKeepTheStoredRows) {
  KvBlockPool pool(kLayers, kDim, kBlock, 8, GetParam());
  SequenceKv leader(&pool);
  ASSERT_TRUE(leader.Reserve(6));
  Fill(leader, 0, 6, 1);
  SequenceKv member(&pool);
  member.ForkFrom(leader, 6);
  EXPECT_EQ(pool.Stats().used_blocks, 2);
  ASSERT_TRUE(member.Reserve(7, 6));  // writes into the shared partial block: copied first
  EXPECT_EQ(pool.Stats().used_blocks, 3);
  EXPECT_NE(member.KeyRow(1, 5), leader.KeyRow(1, 5));
  Expect(member, 0, 6, 1);
  Fill(member, 6, 7, 2);
  ASSERT_TRUE(leader.Reserve(7, 6));
  Fill(leader, 6, 7, 3);
  Expect(member, 6, 7, 2);
  Expect(leader, 0, 6, 1);
  Expect(leader, 6, 7, 3);
}

TEST_P(TypedKvPoolTest, PrefixReuseAndShrinkMoveWholeRows) {
  KvBlockPool pool(kLayers, kDim, kBlock, 8, GetParam());
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  {
    SequenceKv first(&pool);
    ASSERT_TRUE(first.Reserve(9));
    Fill(first, 0, 9, 4);
    first.PublishFullBlocks(tokens, 9);
  }
  SequenceKv second(&pool);
  EXPECT_EQ(second.AttachPrefix(tokens, 9), 8);
  Expect(second, 0, 8, 4);

  // Blocks high in the pool move down in a shrink, contents copied.
  SequenceKv low(&pool), high(&pool);
  ASSERT_TRUE(low.Reserve(2 * kBlock));
  ASSERT_TRUE(high.Reserve(2 * kBlock));
  Fill(high, 0, 2 * kBlock, 5);
  low.ReleaseAll();
  std::unordered_map<BlockId, BlockId> moved;
  ASSERT_TRUE(pool.Resize(4, &moved).ok());
  EXPECT_FALSE(moved.empty());
  high.Remap(moved);
  second.Remap(moved);
  Expect(high, 0, 2 * kBlock, 5);
  Expect(second, 0, 8, 4);
}

INSTANTIATE_TEST_SUITE_P(Types, TypedKvPoolTest,
                         ::testing::Values(kF16Kv, KvTypes{TensorType::kQ8_0, TensorType::kQ8_0},
                                           KvTypes{TensorType::kQ8_0, TensorType::kF16},
                                           KvTypes{TensorType::kBF16, TensorType::kBF16},
                                           KvTypes{TensorType::kQ4_0, TensorType::kQ5_1}),
                         Name);

}  // namespace
}  // namespace sparrow
