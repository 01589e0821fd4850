#include "engine/kernels/vec_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

TEST(VecOpsTest, RmsNormMatchesDoubleReference) {
  const int64_t n = 257;
  const auto x = testing::RandomRow(n, 1);
  const auto w = testing::RandomRow(n, 2);
  const float eps = 1e-5f;
  std::vector<float> out(n);
  RmsNorm(x.data(), w.data(), n, eps, out.data());
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double scale = 1.0 / std::sqrt(ss / n + eps);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(out[i], x[i] * scale * w[i], 1e-5 * std::fabs(x[i] * scale * w[i]) + 1e-7);

  // In place, without weights: the result has unit mean square.
  std::vector<float> y = x;
  RmsNorm(y.data(), nullptr, n, 0.0f, y.data());
  double ms = 0;
  for (float v : y) ms += static_cast<double>(v) * v;
  EXPECT_NEAR(ms / n, 1.0, 1e-5);
}

// Mean 0 and variance 1 before the weight and bias, against a double reference; in place too.
TEST(VecOpsTest, LayerNormMatchesDoubleReference) {
  const int64_t n = 131;
  auto x = testing::RandomRow(n, 3);
  for (float& v : x) v = 3.0f * v + 0.5f;  // an offset for the mean to remove
  const auto w = testing::RandomRow(n, 4);
  const auto b = testing::RandomRow(n, 5);
  const float eps = 1e-12f;
  std::vector<float> out(n);
  LayerNorm(x.data(), w.data(), b.data(), n, eps, out.data());
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  for (int64_t i = 0; i < n; ++i) {
    const double want = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
    EXPECT_NEAR(out[i], want, 1e-5 * std::fabs(want) + 1e-6);
  }
  std::vector<float> y = x;
  LayerNorm(y.data(), nullptr, nullptr, n, eps, y.data());
  double m2 = 0, s2 = 0;
  for (float v : y) m2 += v;
  for (float v : y) s2 += static_cast<double>(v) * v;
  EXPECT_NEAR(m2 / n, 0.0, 1e-6);
  EXPECT_NEAR(s2 / n, 1.0, 1e-5);
}

TEST(VecOpsTest, SiluAndSwiGlu) {
  const float x[] = {0.0f, 1.0f, -1.0f, 20.0f, -20.0f};
  float y[5];
  Silu(x, 5, y);
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(y[i], x[i] / (1.0 + std::exp(-static_cast<double>(x[i]))), 1e-6);
  const float up[] = {2.0f, 3.0f, 4.0f, 0.5f, 1.0f};
  float g[5] = {0.0f, 1.0f, -1.0f, 20.0f, -20.0f};
  SwiGlu(g, up, 5, g);  // in place
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(g[i], y[i] * up[i]);
}

TEST(VecOpsTest, SoftmaxIsNormalizedAndShiftInvariant) {
  std::vector<float> a = {1.0f, 2.0f, 3.0f, -1000.0f};
  std::vector<float> b = {101.0f, 102.0f, 103.0f, -900.0f};
  SoftmaxInPlace(a.data(), 4);
  SoftmaxInPlace(b.data(), 4);
  double sum = 0;
  for (float v : a) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a[i], b[i], 1e-7);
  EXPECT_NEAR(a[2] / a[1], std::exp(1.0), 1e-5);
  EXPECT_EQ(a[3], 0.0f);
}

TEST(VecOpsTest, AddAndScale) {
  std::vector<float> a = {1, 2, 3};
  const std::vector<float> b = {0.5f, -2, 4};
  AddInPlace(a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{1.5f, 0, 7}));
  ScaleInPlace(a.data(), 3, 2.0f);
  EXPECT_EQ(a, (std::vector<float>{3, 0, 14}));
}

}  // namespace
}  // namespace sparrow::kernels
