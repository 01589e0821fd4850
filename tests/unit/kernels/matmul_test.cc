#include "engine/kernels/matmul.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/quantize.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::RandomRow;
using testing::WeightTypes;

// A rows x cols matrix of `type` quantized from random weights, with `pad` spare bytes per row.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;

  TestMatrix(TensorType type, int64_t cols, int64_t rows, size_t pad, uint32_t seed) {
    const size_t row_bytes = RowBytes(type, cols);
    bytes.assign((row_bytes + pad) * rows, 0xab);
    for (int64_t r = 0; r < rows; ++r) {
      const auto x = RandomRow(cols, seed + static_cast<uint32_t>(r), 0.1f);
      QuantizeRow(type, x.data(), bytes.data() + r * (row_bytes + pad), cols);
    }
    w = {type, bytes.data(), cols, rows, row_bytes + pad};
  }
};

int64_t ColsFor(TensorType t) {
  return GetTensorTypeTraits(t)->block_elems == 256 || VecDotType(t) == TensorType::kQ8_K ? 512
                                                                                          : 96;
}

// The expected output, computed one dot product at a time through the public wrappers.
std::vector<float> Naive(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tokens,
                         int64_t ldx, int64_t ldy) {
  std::vector<float> y(n_tokens * ldy, -1.0f);
  const TensorType at = VecDotType(w.type);
  std::vector<uint8_t> act(RowBytes(at, w.cols));
  for (int64_t t = 0; t < n_tokens; ++t) {
    QuantizeActivationRow(at, &x[t * ldx], act.data(), w.cols);
    for (int64_t r = 0; r < w.rows; ++r) {
      y[t * ldy + r] = VecDot(w.type, static_cast<const uint8_t*>(w.data) + r * w.row_stride_bytes,
                              act.data(), w.cols);
    }
  }
  return y;
}

TEST(MatMulTest, MatchesOneDotAtATimeForEveryTypeThreadCountAndBatch) {
  ThreadPool pool1(1), pool2(2);
  for (TensorType type : WeightTypes()) {
    const int64_t cols = ColsFor(type);
    for (int64_t rows : {1, 7, 37}) {
      const TestMatrix m(type, cols, rows, rows == 7 ? 6 : 0, 11);
      for (int64_t n_tokens : {1, 5}) {
        const int64_t ldx = cols + 3, ldy = rows + 2;
        const std::vector<float> x = RandomRow(n_tokens * ldx, 5);
        const std::vector<float> want = Naive(m.w, x, n_tokens, ldx, ldy);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool1, &pool2}) {
          std::vector<float> y(n_tokens * ldy, -1.0f);  // padding must stay untouched
          MatMul(m.w, x.data(), n_tokens, ldx, y.data(), ldy, pool);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want[i]))
                << TensorTypeName(type) << " rows=" << rows << " tokens=" << n_tokens
                << " threads=" << (pool ? pool->size() : 0) << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(MatMulTest, CloseToF32ProductOfDequantizedWeights) {
  for (TensorType type : WeightTypes()) {
    const int64_t cols = ColsFor(type), rows = 9, n_tokens = 3;
    const TestMatrix m(type, cols, rows, 0, 3);
    const std::vector<float> x = RandomRow(n_tokens * cols, 8);
    std::vector<float> y(n_tokens * rows);
    MatMul(m.w, x.data(), n_tokens, cols, y.data(), rows, nullptr);
    std::vector<float> wrow(cols);
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(type, m.bytes.data() + r * m.w.row_stride_bytes, wrow.data(), cols);
      for (int64_t t = 0; t < n_tokens; ++t) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < cols; ++k) {
          ref += static_cast<double>(wrow[k]) * x[t * cols + k];
          mag += std::fabs(static_cast<double>(wrow[k]) * x[t * cols + k]);
        }
        // Only the rounding of the activations (8-bit at worst) separates the two.
        const double tol = type == TensorType::kF32 ? 1e-6 * mag : 2e-2 * mag;
        EXPECT_NEAR(y[t * rows + r], ref, tol) << TensorTypeName(type);
      }
    }
  }
}

TEST(MatMulTest, ResultsDoNotDependOnTheKernelIsa) {
  ThreadPool pool(2);
  for (TensorType type : WeightTypes()) {
    const int64_t cols = ColsFor(type), rows = 21, n_tokens = 4;
    const TestMatrix m(type, cols, rows, 0, 21);
    const std::vector<float> x = RandomRow(n_tokens * cols, 9);
    std::vector<float> want(n_tokens * rows);
    {
      testing::ScopedKernelIsa scalar(KernelIsa::kScalar);
      MatMul(m.w, x.data(), n_tokens, cols, want.data(), rows, &pool);
    }
    for (KernelIsa isa : testing::SimdIsas()) {
      testing::ScopedKernelIsa simd(isa);
      std::vector<float> y(n_tokens * rows);
      MatMul(m.w, x.data(), n_tokens, cols, y.data(), rows, &pool);
      EXPECT_EQ(y, want) << TensorTypeName(type) << " " << KernelIsaName(isa);
    }
  }
}

// MatMul of n_tokens random rows (ldx apart) under every SIMD variant, with and without the
// pool, gives the scalar variant's bits; y's padding (ldy > rows) stays untouched.
void ExpectEveryIsaGivesTheScalarBits(const TestMatrix& m, TensorType type, int64_t cols,
                                      int64_t rows, int64_t n_tokens, int64_t ldx, int64_t ldy,
                                      uint32_t seed, ThreadPool* pool) {
  const std::vector<float> x = RandomRow(n_tokens * ldx, seed);
  std::vector<float> want(n_tokens * ldy, -1.0f);
  {
    testing::ScopedKernelIsa scalar(KernelIsa::kScalar);
    MatMul(m.w, x.data(), n_tokens, ldx, want.data(), ldy, nullptr);
  }
  for (KernelIsa isa : testing::SimdIsas()) {
    testing::ScopedKernelIsa simd(isa);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool}) {
      std::vector<float> y(n_tokens * ldy, -1.0f);
      MatMul(m.w, x.data(), n_tokens, ldx, y.data(), ldy, p);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want[i]))
            << TensorTypeName(type) << " " << KernelIsaName(isa) << " cols=" << cols
            << " rows=" << rows << " tokens=" << n_tokens << " i=" << i;
      }
    }
  }
}

// The GEMM kernels tile rows by 4 (K-quants: 1), tokens by 4 (in chunks of 64) and blocks by 8
// and take rows in thread-sized runs: sizes around every edge must still give exactly the
// scalar dot products.
TEST(MatMulTest, TiledKernelsMatchTheScalarReferenceAtEveryEdge) {
  ThreadPool pool(2);
  for (TensorType type :
       {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ5_0, TensorType::kQ4_1,
        TensorType::kF16, TensorType::kF32, TensorType::kQ4_K, TensorType::kQ5_K}) {
    const bool is_float = type == TensorType::kF16 || type == TensorType::kF32;
    std::vector<int64_t> col_counts = {32, 64, 96, 160, 224, 256, 288, 576, 608};
    // Float rows need not be whole 32-element blocks: the kernels finish them one by one.
    if (is_float) col_counts.insert(col_counts.end(), {7, 45, 100});
    // K-quant rows are whole 256-element super-blocks.
    if (GetTensorTypeTraits(type)->block_elems == 256) col_counts = {256, 512, 768, 2304};
    for (int64_t cols : col_counts) {
      for (int64_t rows : {1, 3, 5, 37}) {
        // Padded rows (a stride wider than the row) where the element type allows it.
        const size_t pad = rows != 3 ? 0 : type == TensorType::kF32 ? 12 : 10;
        const TestMatrix m(type, cols, rows, pad, 31);
        for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17}) {
          const int64_t ldx = cols + 1, ldy = rows + 3;
          ExpectEveryIsaGivesTheScalarBits(m, type, cols, rows, n_tokens, ldx, ldy, 13, &pool);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// The AMX kernels take 16 x 16 tiles of rows and tokens (two by two, tokens laid out 64 at a
// time; K-quants per 256-element super-block) and hand what does not fill a tile to the AVX-512
// kernel: every edge around those sizes,
// padded rows included, must still give exactly the scalar dot products.
TEST(MatMulTest, MatrixUnitTilesMatchTheScalarReferenceAtEveryEdge) {
  ThreadPool pool(2);
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ4_K,
                          TensorType::kQ5_K, TensorType::kQ6_K}) {
    const bool k_quant = GetTensorTypeTraits(type)->block_elems == 256;
    for (int64_t cols :
         k_quant ? std::vector<int64_t>{256, 512, 768} : std::vector<int64_t>{32, 96, 256, 288}) {
      for (int64_t rows : {16, 31, 32, 33, 48, 79}) {
        const size_t pad = rows == 48 ? 10 : 0;
        const TestMatrix m(type, cols, rows, pad, 37);
        for (int64_t n_tokens : {15, 16, 17, 32, 33, 48, 64, 65, 97}) {
          const int64_t ldx = cols + 3, ldy = rows + 1;
          ExpectEveryIsaGivesTheScalarBits(m, type, cols, rows, n_tokens, ldx, ldy, 19, &pool);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Prompt batches longer than one token chunk (64) and row runs longer than one cache chunk.
TEST(MatMulTest, LongBatchesMatchTheScalarReference) {
  ThreadPool pool(2);
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ5_0, TensorType::kF16,
                          TensorType::kF32, TensorType::kQ4_K, TensorType::kQ5_K}) {
    const int64_t cols = GetTensorTypeTraits(type)->block_elems == 256 ? 768 : 576;
    const int64_t rows = 203, n_tokens = 131;
    const TestMatrix m(type, cols, rows, 0, 41);
    const std::vector<float> x = RandomRow(n_tokens * cols, 17);
    std::vector<float> want(n_tokens * rows);
    {
      testing::ScopedKernelIsa scalar(KernelIsa::kScalar);
      MatMul(m.w, x.data(), n_tokens, cols, want.data(), rows, nullptr);
    }
    for (KernelIsa isa : testing::SimdIsas()) {
      testing::ScopedKernelIsa simd(isa);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> y(n_tokens * rows);
        MatMul(m.w, x.data(), n_tokens, cols, y.data(), rows, p);
        EXPECT_EQ(y, want) << TensorTypeName(type) << " " << KernelIsaName(isa);
      }
    }
  }
}

TEST(MatMulTest, ZeroTokensOrRowsDoNothing) {
  const TestMatrix m(TensorType::kQ4_0, 64, 3, 0, 1);
  std::vector<float> y(3, 5.0f);
  MatMul(m.w, nullptr, 0, 64, y.data(), 3, nullptr);
  EXPECT_EQ(y, std::vector<float>(3, 5.0f));
}

TEST(MatMulDeathTest, RejectsRowsThatAreNotWholeBlocks) {
  const TestMatrix m(TensorType::kQ4_K, 256, 2, 0, 1);
  WeightMatrix bad = m.w;
  bad.cols = 128;  // not a multiple of 256
  std::vector<float> x(128), y(2);
  EXPECT_DEATH(MatMul(bad, x.data(), 1, 128, y.data(), 2, nullptr), "invariant failed");
  WeightMatrix unsupported = m.w;
  unsupported.type = TensorType::kIQ2_XXS;
  EXPECT_DEATH(MatMul(unsupported, x.data(), 1, 256, y.data(), 2, nullptr), "invariant failed");
}

TEST(GetRowsTest, DequantizesTheSelectedRows) {
  for (TensorType type :
       {TensorType::kF32, TensorType::kF16, TensorType::kQ4_0, TensorType::kQ6_K}) {
    const int64_t cols = 256, rows = 5;
    const TestMatrix m(type, cols, rows, 2, 4);
    const int32_t ids[] = {4, 0, 4, 2};
    std::vector<float> out(4 * cols);
    GetRows(m.w, ids, 4, out.data());
    std::vector<float> want(cols);
    for (int i = 0; i < 4; ++i) {
      DequantizeRow(type, m.bytes.data() + ids[i] * m.w.row_stride_bytes, want.data(), cols);
      EXPECT_EQ(std::vector<float>(out.begin() + i * cols, out.begin() + (i + 1) * cols), want);
    }
  }
}

TEST(GetRowsDeathTest, RejectsIdsOutOfRange) {
  const TestMatrix m(TensorType::kF32, 32, 2, 0, 1);
  const int32_t ids[] = {2};
  std::vector<float> out(32);
  EXPECT_DEATH(GetRows(m.w, ids, 1, out.data()), "invariant failed");
}

}  // namespace
}  // namespace sparrow::kernels
