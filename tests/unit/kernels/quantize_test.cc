#include "engine/kernels/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::RandomRow;

std::vector<float> RoundTrip(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowBytes(type, static_cast<int64_t>(x.size())));
  QuantizeRow(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  DequantizeRow(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

double RelativeRmse(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - y[i]) * (x[i] - y[i]);
    norm += x[i] * x[i];
  }
  return std::sqrt(err / norm);
}

struct Bound {
  TensorType type;
  double max_rel_rmse;  // on Gaussian data with rare 8x outliers
};

// Bounds sit a little above what these encoders reach; a wrong layout or scale is far above.
const Bound kBounds[] = {
    {TensorType::kF32, 0.0},    {TensorType::kF16, 1e-3},   {TensorType::kBF16, 5e-3},
    {TensorType::kQ8_0, 0.01},  {TensorType::kQ8_1, 0.01},  {TensorType::kQ8_K, 0.025},
    {TensorType::kQ6_K, 0.035}, {TensorType::kQ5_0, 0.085}, {TensorType::kQ5_1, 0.06},
    {TensorType::kQ5_K, 0.05},  {TensorType::kQ4_0, 0.17},  {TensorType::kQ4_1, 0.12},
    {TensorType::kQ4_K, 0.10},  {TensorType::kQ3_K, 0.23},  {TensorType::kQ2_K, 0.35},
};

TEST(QuantizeTest, RoundTripErrorIsBounded) {
  const std::vector<float> x = RandomRow(4096, 7);
  for (const Bound& b : kBounds) {
    const double e = RelativeRmse(x, RoundTrip(b.type, x));
    EXPECT_LE(e, b.max_rel_rmse) << TensorTypeName(b.type);
    // Shown so the bounds can be re-tuned when an encoder changes.
    std::printf("%-5s rel rmse %.5f\n", std::string(TensorTypeName(b.type)).c_str(), e);
  }
}

TEST(QuantizeTest, SpecialRows) {
  for (const Bound& b : kBounds) {
    SCOPED_TRACE(std::string(TensorTypeName(b.type)));
    const int64_t n = 256;
    // All zeros decode to zeros.
    const std::vector<float> zeros(n, 0.0f);
    for (float v : RoundTrip(b.type, zeros)) ASSERT_EQ(v, 0.0f);
    // A constant row, an all-positive row and an all-negative row stay close (short rows: a
    // little slack over the 4096-element bound).
    const double bound = 1.25 * b.max_rel_rmse;
    const std::vector<float> constant(n, -0.75f);
    EXPECT_LE(RelativeRmse(constant, RoundTrip(b.type, constant)), std::max(bound, 0.02));
    std::vector<float> positive = RandomRow(n, 3);
    for (float& v : positive) v = std::fabs(v) + 0.5f;
    EXPECT_LE(RelativeRmse(positive, RoundTrip(b.type, positive)), bound);
    std::vector<float> negative = positive;
    for (float& v : negative) v = -v;
    EXPECT_LE(RelativeRmse(negative, RoundTrip(b.type, negative)), bound);
    // Tiny and large magnitudes (fp16 scales must not under- or overflow at these).
    for (float scale : {1e-2f, 100.0f}) {
      std::vector<float> s = RandomRow(n, 5);
      for (float& v : s) v *= scale;
      EXPECT_LE(RelativeRmse(s, RoundTrip(b.type, s)), std::max(bound, 2e-3)) << scale;
    }
  }
}

TEST(QuantizeTest, Q8_0KeepsTheLargestMagnitudeExactlyRepresentable) {
  std::vector<float> x(32, 0.0f);
  x[5] = -3.0f;
  x[6] = 1.5f;
  const auto y = RoundTrip(TensorType::kQ8_0, x);
  EXPECT_NEAR(y[5], -3.0f, 3.0f / 127 / 2 + 1e-3);
  EXPECT_NEAR(y[6], 1.5f, 3.0f / 127 / 2 + 1e-3);
}

TEST(QuantizeTest, CanQuantizeListsTheSupportedTypes) {
  EXPECT_TRUE(CanQuantize(TensorType::kQ4_K));
  EXPECT_TRUE(CanQuantize(TensorType::kBF16));
  EXPECT_FALSE(CanQuantize(TensorType::kIQ2_XXS));
  EXPECT_FALSE(CanQuantize(TensorType::kI32));
}

}  // namespace
}  // namespace sparrow::kernels
