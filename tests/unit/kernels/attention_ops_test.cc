#include "engine/kernels/attention_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

}  // namespace
}  // namespace sparrow::kernels
