// The sparse FFN kernels: the axpy of every instruction-set variant against the scalar one (bit
// for bit), GatherRowDots against whole-matrix MatMul, and AccumulateRows against a plain
// dequantize-and-fma loop, for every weight type and several thread counts.
#include "engine/kernels/sparse_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::BlockElems;
using testing::RandomRow;
using testing::RandomWeightRow;
using testing::ScopedKernelIsa;
using testing::SimdIsas;
using testing::WeightTypes;

struct RandomMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;

  RandomMatrix(TensorType type, int64_t cols, int64_t rows, uint32_t seed) {
    const size_t row_bytes = RowBytes(type, cols);
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = RandomWeightRow(type, cols, seed + static_cast<uint32_t>(r));
      bytes.insert(bytes.end(), row.begin(), row.end());
    }
    w = {type, bytes.data(), cols, rows, row_bytes};
  }
  const uint8_t* Row(int64_t r) const { return bytes.data() + r * w.row_stride_bytes; }
};

// y + a * w[i] as the sparse kernels round it: fma(a, w, y) for float rows; fma(a * d, q, y) for
// Q4_0/Q8_0, whose element i is w = q * d exactly (d the block's fp16 scale).
float ReferenceFma(TensorType type, const std::vector<uint8_t>& row, int64_t i, float a, float w,
                   float y) {
  if (type != TensorType::kQ4_0 && type != TensorType::kQ8_0) return std::fma(a, w, y);
  const size_t block_bytes = GetTensorTypeTraits(type)->block_bytes;
  uint16_t h;
  std::memcpy(&h, &row[static_cast<size_t>(i / 32) * block_bytes], 2);
  const float d = Fp16ToFp32(h);
  return std::fma(a * d, w / d, y);
}

// The Q4_0 contract of sparse_ops.h written out plainly: groups of 16 rows, per 32-column block
// the coefficients alpha * d rounded to 16 bits on their largest, exact integer sums.
void NaiveQ4_0Integer(const std::vector<const uint8_t*>& rows, size_t offset,
                      const std::vector<float>& alpha, float* y, int64_t len) {
  const size_t n = rows.size();
  for (size_t k0 = 0; k0 < n; k0 += 16) {
    const size_t k1 = std::min(n, k0 + 16);
    for (int64_t b = 0; b < len / 32; ++b) {
      std::vector<float> c;
      std::vector<const uint8_t*> blk;
      float m = 0.0f;
      for (size_t k = k0; k < k1; ++k) {
        blk.push_back(rows[k] + offset + static_cast<size_t>(b) * 18);
        uint16_t h;
        std::memcpy(&h, blk.back(), 2);
        c.push_back(alpha[k] * Fp16ToFp32(h));
        m = std::max(m, std::fabs(c.back()));
      }
      if (m == 0.0f) continue;
      const float inv = 32767.0f / m, s = m * (1.0f / 32767.0f);
      for (int j = 0; j < 32; ++j) {
        int64_t sum = 0;
        for (size_t k = 0; k < c.size(); ++k) {
          const uint8_t byte = blk[k][2 + j % 16];
          const int q = (j < 16 ? byte & 0xf : byte >> 4) - 8;
          sum += static_cast<int64_t>(std::rint(c[k] * inv)) * q;
        }
        y[b * 32 + j] = std::fma(s, static_cast<float>(sum), y[b * 32 + j]);
      }
    }
  }
}

int64_t ColsFor(TensorType t) {
  // Awkward: not a multiple of any SIMD width beyond what the blocks force.
  const int64_t b = std::max<int64_t>(BlockElems(t), BlockElems(VecDotType(t)));
  return b == 1 ? 77 : b == 32 ? 7 * 32 : 2 * 256;
}

TEST(SparseOpsTest, AxpyOfEveryVariantIsBitIdenticalToScalar) {
  const auto& scalar = GetKernelTable(KernelIsa::kScalar);
  for (KernelIsa isa : SimdIsas()) {
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100, 257}) {
      SCOPED_TRACE(std::string(KernelIsaName(isa)) + " n=" + std::to_string(n));
      const auto x = RandomRow(n, 11 + n);
      const auto y0 = RandomRow(n, 12 + n);
      std::vector<float> want = y0, got = y0;
      scalar.axpy(-0.37f, x.data(), want.data(), n);
      GetKernelTable(isa).axpy(-0.37f, x.data(), got.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
    }
  }
}

// Every axpy_row slot of every variant: y += a * row, bit for bit what the reference arithmetic
// gives: one std::fma per element, with a quantized block's scale folded into the coefficient
// (y = fma(a * d, q, y); q = w / d recovers the block's integers exactly).
TEST(SparseOpsTest, AxpyRowOfEveryTypeAndVariantMatchesTheReferenceArithmetic) {
  std::vector<KernelIsa> isas = SimdIsas();
  isas.insert(isas.begin(), KernelIsa::kScalar);
  int covered = 0;
  for (TensorType type : WeightTypes()) {
    for (KernelIsa isa : isas) {
      const AxpyRowFn fn = GetKernelTable(isa).axpy_row[static_cast<int>(type)];
      if (!fn) continue;
      ++covered;
      const int64_t b = BlockElems(type);
      for (int64_t n : {b == 1 ? int64_t{13} : b, b == 1 ? int64_t{77} : 7 * b}) {
        SCOPED_TRACE(std::string(TensorTypeName(type)) + " " + std::string(KernelIsaName(isa)) +
                     " n=" + std::to_string(n));
        const auto row = RandomWeightRow(type, n, 5 + static_cast<uint32_t>(n));
        std::vector<float> w(n);
        DequantizeRow(type, row.data(), w.data(), n);
        const auto y0 = RandomRow(n, 6);
        std::vector<float> want = y0, got = y0;
        for (int64_t i = 0; i < n; ++i) want[i] = ReferenceFma(type, row, i, 0.7f, w[i], want[i]);
        fn(0.7f, row.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
      }
    }
  }
  EXPECT_GE(covered, 4);  // F32, F16, Q4_0, Q8_0 at least in the scalar table
}

// Every accumulate_rows slot: many rows into a span at once, the bits of axpy_row row by row
// (Q4_0: of its integer contract).
TEST(SparseOpsTest, AccumulateRowsSlotsEqualRowByRowAxpy) {
  std::vector<KernelIsa> isas = SimdIsas();
  isas.insert(isas.begin(), KernelIsa::kScalar);
  for (TensorType type : WeightTypes()) {
    for (KernelIsa isa : isas) {
      const AccumulateRowsFn fn = GetKernelTable(isa).accumulate_rows[static_cast<int>(type)];
      if (!fn) continue;
      const AxpyRowFn one = GetKernelTable(KernelIsa::kScalar).axpy_row[static_cast<int>(type)];
      ASSERT_NE(one, nullptr) << "no scalar axpy_row to check against";
      for (int64_t len : {32, 64, 96, 160}) {
        SCOPED_TRACE(std::string(TensorTypeName(type)) + " " + std::string(KernelIsaName(isa)) +
                     " len=" + std::to_string(len));
        const int64_t cols = len + 64;  // the span starts 32 elements in
        std::vector<std::vector<uint8_t>> rows;
        std::vector<const uint8_t*> ptrs;
        const auto alpha = RandomRow(9, 3);
        for (int k = 0; k < 9; ++k) rows.push_back(RandomWeightRow(type, cols, 40 + k));
        for (const auto& r : rows) ptrs.push_back(r.data());
        const size_t offset = RowBytes(type, 32);
        const auto y0 = RandomRow(len, 8);
        std::vector<float> want = y0, got = y0;
        if (type == TensorType::kQ4_0) {
          NaiveQ4_0Integer(ptrs, offset, alpha, want.data(), len);
        }
        for (int k = 0; k < 9 && type != TensorType::kQ4_0; ++k) {
          // The reference reads the row from element 32 on, as the span does.
          std::vector<float> full(cols), tail(len);
          DequantizeRow(type, rows[k].data(), full.data(), cols);
          for (int64_t j = 0; j < len; ++j)
            want[j] = ReferenceFma(type, rows[k], 32 + j, alpha[k], full[32 + j], want[j]);
        }
        fn(ptrs.data(), offset, alpha.data(), 9, got.data(), len);
        for (int64_t j = 0; j < len; ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[j]), std::bit_cast<uint32_t>(want[j])) << j;
      }
    }
  }
}

TEST(SparseOpsTest, MatMulRowsEqualsTheRowsOfMatMul) {
  ThreadPool pool(3);
  for (TensorType type : WeightTypes()) {
    SCOPED_TRACE(std::string(TensorTypeName(type)));
    const int64_t cols = ColsFor(type), rows = 70;
    RandomMatrix m(type, cols, rows, 5);
    const auto x = RandomRow(cols, 9);
    std::vector<float> full(rows);
    MatMul(m.w, x.data(), 1, cols, full.data(), rows, nullptr);
    // Runs of consecutive rows (3, 4, 5 / 40, 41 / 67, 68, 69) and scattered ones.
    const std::vector<int32_t> pick = {69, 0,  3,  4,  5,  40, 41, 17, 67, 68, 69, 1,
                                       2,  8,  13, 21, 34, 55, 44, 12, 9,  60, 61, 62,
                                       63, 64, 65, 66, 10, 11, 30, 31, 32, 33, 6};
    for (KernelIsa isa : [] {
           auto v = SimdIsas();
           v.push_back(KernelIsa::kScalar);
           return v;
         }()) {
      ScopedKernelIsa scoped(isa);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> y(pick.size(), -1.0f);
        MatMulRows(m.w, pick.data(), static_cast<int64_t>(pick.size()), x.data(), y.data(), p);
        for (size_t k = 0; k < pick.size(); ++k) {
          ASSERT_EQ(std::bit_cast<uint32_t>(y[k]), std::bit_cast<uint32_t>(full[pick[k]]))
              << KernelIsaName(isa) << " k=" << k;
        }
        // The same rows by address (a neuron cache's slots), copied apart from each other.
        std::vector<std::vector<uint8_t>> copies;
        std::vector<const uint8_t*> ptrs;
        for (int32_t r : pick) copies.emplace_back(m.Row(r), m.Row(r) + m.w.row_stride_bytes);
        for (const auto& c : copies) ptrs.push_back(c.data());
        std::fill(y.begin(), y.end(), -1.0f);
        MatMulRowPointers(type, cols, ptrs.data(), static_cast<int64_t>(ptrs.size()), x.data(),
                          y.data(), p);
        for (size_t k = 0; k < pick.size(); ++k) {
          ASSERT_EQ(std::bit_cast<uint32_t>(y[k]), std::bit_cast<uint32_t>(full[pick[k]]))
              << KernelIsaName(isa) << " by address, k=" << k;
        }
      }
    }
  }
}

// out[t] += sum over k of alpha[t][rows[k]] * row rows[k], term by term in order of k.
std::vector<float> NaiveAccumulate(const RandomMatrix& m, const std::vector<int32_t>& rows,
                                   const std::vector<float>& alpha, int64_t lda, int64_t n_tokens,
                                   std::vector<float> out, int64_t ldo) {
  if (m.w.type == TensorType::kQ4_0) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::vector<const uint8_t*> used;
      std::vector<float> coef;
      for (int32_t r : rows) {
        if (alpha[t * lda + r] == 0.0f) continue;
        used.push_back(m.Row(r));
        coef.push_back(alpha[t * lda + r]);
      }
      NaiveQ4_0Integer(used, 0, coef, out.data() + t * ldo, m.w.cols);
    }
    return out;
  }
  std::vector<float> row(m.w.cols);
  for (int32_t r : rows) {
    DequantizeRow(m.w.type, m.Row(r), row.data(), m.w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float a = alpha[t * lda + r];
      if (a == 0.0f) continue;
      const std::vector<uint8_t> raw(m.Row(r), m.Row(r) + m.w.row_stride_bytes);
      for (int64_t j = 0; j < m.w.cols; ++j)
        out[t * ldo + j] = ReferenceFma(m.w.type, raw, j, a, row[j], out[t * ldo + j]);
    }
  }
  return out;
}

TEST(SparseOpsTest, AccumulateRowsMatchesTheReferenceForEveryTypeAndThreadCount) {
  ThreadPool pool2(2), pool3(3);
  const int64_t n_rows = 200;
  for (TensorType type : WeightTypes()) {
    if (!CanDequantize(type)) continue;
    // Columns of several chunks, so the threads split them.
    const int64_t cols = BlockElems(type) == 256 ? 4 * 256 : 1000 - 1000 % BlockElems(type);
    RandomMatrix m(type, cols, n_rows, 21);
    for (int64_t n_tokens : {1, 3}) {
      SCOPED_TRACE(std::string(TensorTypeName(type)) + " tokens=" + std::to_string(n_tokens));
      const int64_t lda = n_rows + 3, ldo = cols + 5;
      auto alpha = RandomRow(n_tokens * lda, 31);
      for (size_t i = 0; i < alpha.size(); i += 3) alpha[i] = 0.0f;  // skipped terms
      const std::vector<int32_t> rows = {7, 199, 0, 50, 51, 52, 120, 3, 99, 150};
      const auto out0 = RandomRow(n_tokens * ldo, 41);
      const auto want = NaiveAccumulate(m, rows, alpha, lda, n_tokens, out0, ldo);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
        auto got = out0;
        AccumulateRows(m.w, rows.data(), static_cast<int64_t>(rows.size()), alpha.data(), lda,
                       n_tokens, got.data(), ldo, p);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
      }
      for (KernelIsa isa : SimdIsas()) {
        ScopedKernelIsa scoped(isa);
        auto got = out0;
        AccumulateRows(m.w, rows.data(), static_cast<int64_t>(rows.size()), alpha.data(), lda,
                       n_tokens, got.data(), ldo, &pool2);
        EXPECT_EQ(got, want) << KernelIsaName(isa);
      }
      // Token by token with the rows by address: the same bits.
      std::vector<std::vector<uint8_t>> copies;
      std::vector<const uint8_t*> ptrs;
      for (int32_t r : rows) copies.emplace_back(m.Row(r), m.Row(r) + m.w.row_stride_bytes);
      for (const auto& c : copies) ptrs.push_back(c.data());
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool3}) {
        auto got = out0;
        for (int64_t t = 0; t < n_tokens; ++t) {
          std::vector<float> coef;
          for (int32_t r : rows) coef.push_back(alpha[t * lda + r]);
          AccumulateRowPointers(type, cols, ptrs.data(), static_cast<int64_t>(ptrs.size()),
                                coef.data(), got.data() + t * ldo, p);
        }
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
      }
    }
  }
}

// Q4_0's integer accumulation stays within float noise of the exact sum of dequantized rows
// times their coefficients: rounding the coefficients to 16 bits costs about 1e-5 of the
// largest term.
TEST(SparseOpsTest, Q4_0IntegerAccumulationIsCloseToTheExactSum) {
  const int64_t cols = 256, n_rows = 40;
  RandomMatrix m(TensorType::kQ4_0, cols, n_rows, 5);
  std::vector<int32_t> rows;
  for (int32_t r = 0; r < n_rows; r += 2) rows.push_back(r);  // 20 rows: a group and a half
  auto alpha = RandomRow(n_rows, 9);
  alpha[4] *= 100.0f;  // one large coefficient: the others keep their precision anyway
  std::vector<double> exact(cols, 0.0);
  std::vector<float> row(cols);
  double largest = 0.0;
  for (int32_t r : rows) {
    DequantizeRow(TensorType::kQ4_0, m.Row(r), row.data(), cols);
    for (int64_t j = 0; j < cols; ++j) {
      exact[j] += static_cast<double>(alpha[r]) * row[j];
      largest = std::max(largest, std::fabs(static_cast<double>(alpha[r]) * row[j]));
    }
  }
  std::vector<float> got(cols, 0.0f);
  AccumulateRows(m.w, rows.data(), static_cast<int64_t>(rows.size()), alpha.data(), n_rows, 1,
                 got.data(), cols, nullptr);
  for (int64_t j = 0; j < cols; ++j) EXPECT_NEAR(got[j], exact[j], 2e-4 * largest) << j;
}

TEST(SparseOpsTest, RoundToVecDotTypeRoundsAsTheDotProductDoes) {
  auto x = RandomRow(64, 3);
  auto f32 = x;
  RoundToVecDotType(TensorType::kF32, f32.data(), 64);
  EXPECT_EQ(f32, x);
  auto q = x;
  RoundToVecDotType(TensorType::kQ4_0, q.data(), 64);  // through Q8_0
  std::vector<uint8_t> buf(RowBytes(TensorType::kQ8_0, 64));
  QuantizeActivationRow(TensorType::kQ8_0, x.data(), buf.data(), 64);
  std::vector<float> want(64);
  DequantizeRow(TensorType::kQ8_0, buf.data(), want.data(), 64);
  EXPECT_EQ(q, want);
  EXPECT_NE(q, x);
}

}  // namespace
}  // namespace sparrow::kernels
