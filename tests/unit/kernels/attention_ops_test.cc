#include "engine/kernels/attention_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/kv_quantize.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::RandomRow;

// n rows of d floats, stored `stride` floats apart, plus the pointer array the kernels take.
struct Rows {
  std::vector<float> data;
  std::vector<const float*> ptrs;
  Rows(int64_t n, int64_t stride, uint32_t seed) : data(RandomRow(n * stride, seed)) {
    for (int64_t j = 0; j < n; ++j) ptrs.push_back(data.data() + j * stride);
  }
};

// Every variant against a double-precision reference, for head sizes with and without SIMD
// tails and key counts around the 4-key and 8-lane steps.
TEST(AttentionOpsTest, EveryIsaMatchesADoubleReference) {
  std::vector<KernelIsa> isas = testing::SimdIsas();
  isas.push_back(KernelIsa::kScalar);
  for (KernelIsa isa : isas) {
    testing::ScopedKernelIsa scoped(isa);
    for (int64_t d : {8, 13, 64, 72, 128}) {
      for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 17, 37}) {
        const int64_t offset = 3, stride = d + 5;
        const Rows rows(n, stride, static_cast<uint32_t>(7 * d + n));
        const std::vector<float> q = RandomRow(d, 99);
        std::vector<float> scores(n);
        AttentionScores(q.data(), rows.ptrs.data(), offset, n, d, 0.125f, scores.data());
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < d; ++i) {
            want += static_cast<double>(q[i]) * rows.ptrs[j][offset + i];
            mag += std::fabs(static_cast<double>(q[i]) * rows.ptrs[j][offset + i]);
          }
          ASSERT_NEAR(scores[j], 0.125 * want, 1e-6 * mag + 1e-7)
              << KernelIsaName(isa) << " d=" << d << " n=" << n << " j=" << j;
        }

        std::vector<float> x = RandomRow(n, static_cast<uint32_t>(n), 4.0f);
        if (n > 2) x[1] = -200.0f;  // far below the max: exp underflows to (almost) zero
        const std::vector<float> orig = x;
        const double sum = ExpMinusMax(x.data(), n);
        double max = orig[0], want_sum = 0;
        for (float v : orig) max = std::max<double>(max, v);
        for (int64_t j = 0; j < n; ++j) {
          // The argument rounded to float as the kernels see it; the exp itself within ~3 ulps.
          const double e = std::exp(static_cast<double>(orig[j] - static_cast<float>(max)));
          want_sum += e;
          ASSERT_NEAR(x[j], e, 4e-7 * e + 1e-30) << KernelIsaName(isa) << " n=" << n << " j=" << j;
        }
        EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << KernelIsaName(isa);

        std::vector<float> out(d, -1.0f);
        AttentionMix(x.data(), rows.ptrs.data(), offset, n, d, out.data());
        for (int64_t i = 0; i < d; ++i) {
          double want = 0, mag = 0;
          for (int64_t j = 0; j < n; ++j) {
            want += static_cast<double>(x[j]) * rows.ptrs[j][offset + i];
            mag += std::fabs(static_cast<double>(x[j]) * rows.ptrs[j][offset + i]);
          }
          ASSERT_NEAR(out[i], want, 1e-6 * mag + 1e-7)
              << KernelIsaName(isa) << " d=" << d << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

// n typed rows of two heads of d elements each (a cache row), the second head the one read.
struct TypedRows {
  std::vector<std::vector<uint8_t>> data;
  std::vector<const uint8_t*> ptrs;
  std::vector<std::vector<float>> values;  // the second head as stored, dequantized
  size_t offset;
  TypedRows(TensorType type, int64_t n, int64_t d, uint32_t seed) : offset(RowBytes(type, d)) {
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<float> x = RandomRow(2 * d, seed + static_cast<uint32_t>(j));
      data.emplace_back(RowBytes(type, 2 * d));
      QuantizeKvRow(type, x.data(), data.back().data(), 2 * d);
      values.emplace_back(d);
      DequantizeRow(type, data.back().data() + offset, values.back().data(), d);
    }
    for (const auto& r : data) ptrs.push_back(r.data());
  }
};

// The typed loops of every variant give the scalar variant's bits, and the scalar one computes
// what a double-precision loop over the stored values (and the rounded query) does.
TEST(AttentionOpsTest, TypedRowsMatchScalarBitForBit) {
  for (TensorType type : {TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
                          TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1}) {
    const bool plain = type == TensorType::kF16 || type == TensorType::kBF16;
    const bool affine = type == TensorType::kQ4_1 || type == TensorType::kQ5_1;
    const std::vector<int64_t> dims =
        plain ? std::vector<int64_t>{8, 13, 64} : std::vector<int64_t>{32, 64, 128};
    for (int64_t d : dims) {
      for (int64_t n : {1, 3, 8, 17, 37}) {
        SCOPED_TRACE(std::string(TensorTypeName(type)) + " d=" + std::to_string(d) +
                     " n=" + std::to_string(n));
        const TypedRows rows(type, n, d, static_cast<uint32_t>(3 * d + n));
        const std::vector<float> q = RandomRow(d, 5);
        const TensorType qt = VecDotType(type);
        std::vector<uint8_t> q_act(RowBytes(qt, d));
        std::vector<float> q_round(d);
        std::vector<float> w = RandomRow(n, 17, 0.3f);
        std::vector<float> want_scores(n), want_out(d);
        {
          testing::ScopedKernelIsa scoped(KernelIsa::kScalar);
          QuantizeActivationRow(qt, q.data(), q_act.data(), d);
          DequantizeRow(qt, q_act.data(), q_round.data(), d);
          AttentionScoresTyped(type, q_act.data(), rows.ptrs.data(), rows.offset, n, d, 0.25f,
                               want_scores.data());
          AttentionMixTyped(type, w.data(), rows.ptrs.data(), rows.offset, n, d, want_out.data());
        }
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0, mag = 0;
          for (int64_t i = 0; i < d; ++i) {
            dot += static_cast<double>(q_round[i]) * rows.values[j][i];
            mag += std::fabs(static_cast<double>(q_round[i]) * rows.values[j][i]);
          }
          // q4_1/q5_1 against q8_1: ggml's product takes each block's sum d * sum(q) as the
          // fp16 q8_1 stores it, off by up to 2^-11 of that term.
          ASSERT_NEAR(want_scores[j], 0.25 * dot, (affine ? 1e-3 : 1e-6) * mag + 1e-7) << "j=" << j;
        }
        for (int64_t i = 0; i < d; ++i) {
          double acc = 0, mag = 0;
          for (int64_t j = 0; j < n; ++j) {
            acc += static_cast<double>(w[j]) * rows.values[j][i];
            mag += std::fabs(static_cast<double>(w[j]) * rows.values[j][i]);
          }
          ASSERT_NEAR(want_out[i], acc, 1e-6 * mag + 1e-7) << "i=" << i;
        }
        for (KernelIsa isa : testing::SimdIsas()) {
          testing::ScopedKernelIsa scoped(isa);
          std::vector<float> scores(n), out(d, -1.0f);
          AttentionScoresTyped(type, q_act.data(), rows.ptrs.data(), rows.offset, n, d, 0.25f,
                               scores.data());
          AttentionMixTyped(type, w.data(), rows.ptrs.data(), rows.offset, n, d, out.data());
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(scores[j], want_scores[j]) << KernelIsaName(isa) << " j=" << j;
          for (int64_t i = 0; i < d; ++i)
            ASSERT_EQ(out[i], want_out[i]) << KernelIsaName(isa) << " i=" << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparrow::kernels
