#include "engine/runtime/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace sparrow {
namespace {

// Plain double-precision rotation, written from the RoPE definition.
std::vector<float> Reference(RopeStyle style, std::vector<float> x, int64_t n_heads,
                             int64_t head_dim, int64_t n_rot, int64_t pos, double base) {
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const double theta = pos * std::pow(base, -2.0 * i / n_rot);
      const int64_t a = h * head_dim + (style == RopeStyle::kNormal ? 2 * i : i);
      const int64_t b = h * head_dim + (style == RopeStyle::kNormal ? 2 * i + 1 : i + n_rot / 2);
      const double x0 = x[a], x1 = x[b];
      x[a] = static_cast<float>(x0 * std::cos(theta) - x1 * std::sin(theta));
      x[b] = static_cast<float>(x0 * std::sin(theta) + x1 * std::cos(theta));
    }
  }
  return x;
}

class RopeTest : public ::testing::TestWithParam<RopeStyle> {};

TEST_P(RopeTest, MatchesDefinition) {
  const int64_t n_heads = 3, head_dim = 12, n_rot = 8;  // partial rotation: dims 8..11 untouched
  RopeTable table(n_rot, 10000.0f, 1.0f);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (int64_t pos : {0, 1, 7, 300}) {
    std::vector<float> x(n_heads * head_dim);
    for (float& v : x) v = nd(rng);
    std::vector<float> c(n_rot / 2), s(n_rot / 2);
    table.Compute(pos, c.data(), s.data());
    auto want = Reference(GetParam(), x, n_heads, head_dim, n_rot, pos, 10000.0);
    ApplyRope(GetParam(), x.data(), n_heads, head_dim, n_rot, c.data(), s.data());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(x[i], want[i], 2e-4) << "pos " << pos << " i " << i;
  }
}

TEST_P(RopeTest, PositionZeroIsIdentityAndNormIsKept) {
  RopeTable table(8, 10000.0f, 1.0f);
  std::vector<float> c(4), s(4);
  table.Compute(0, c.data(), s.data());
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  auto orig = x;
  ApplyRope(GetParam(), x.data(), 1, 8, 8, c.data(), s.data());
  EXPECT_EQ(x, orig);
  table.Compute(123, c.data(), s.data());
  ApplyRope(GetParam(), x.data(), 1, 8, 8, c.data(), s.data());
  double n0 = 0, n1 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    n0 += orig[i] * orig[i];
    n1 += x[i] * x[i];
  }
  EXPECT_NEAR(n0, n1, 1e-3);
  EXPECT_NE(x, orig);
}

INSTANTIATE_TEST_SUITE_P(Styles, RopeTest, ::testing::Values(RopeStyle::kNormal, RopeStyle::kNeox));

TEST(RopeTest, LinearScalingDividesPositions) {
  RopeTable scaled(8, 10000.0f, 0.5f), plain(8, 10000.0f, 1.0f);
  std::vector<float> c1(4), s1(4), c2(4), s2(4);
  scaled.Compute(10, c1.data(), s1.data());
  plain.Compute(5, c2.data(), s2.data());
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(c1[i], c2[i], 1e-5);
    EXPECT_NEAR(s1[i], s2[i], 1e-5);
  }
}

TEST(RopeTest, FreqFactorsDivideEachPairsAngle) {
  // Llama 3.1's rope_freqs: pair i turns pos * base^(-2i/n) / factor[i].
  RopeParams p;
  p.n_rot = 8;
  p.freq_factors = {1.0f, 2.0f, 4.0f, 8.0f};
  RopeTable table(p);
  std::vector<float> c(4), s(4);
  table.Compute(37, c.data(), s.data());
  for (int i = 0; i < 4; ++i) {
    const double theta = 37 * std::pow(10000.0, -2.0 * i / 8) / p.freq_factors[i];
    EXPECT_NEAR(c[i], std::cos(theta), 1e-5) << i;
    EXPECT_NEAR(s[i], std::sin(theta), 1e-5) << i;
  }
}

TEST(RopeTest, YarnExtrapolatesHighFrequenciesAndInterpolatesLowOnes) {
  // YaRN (arXiv 2309.00071): pairs that turn many times over the original context keep their
  // angle, pairs that turn less than once are divided by the factor, a ramp between; cos and sin
  // are scaled by the attention factor times 1 + 0.1 ln(factor).
  RopeParams p;
  p.n_rot = 64;
  p.freq_base = 10000.0f;
  p.freq_scale = 0.25f;
  p.ext_factor = 1.0f;
  p.attn_factor = 0.9f;
  p.n_ctx_orig = 512;
  RopeTable table(p);
  std::vector<float> c(32), s(32);
  const int64_t pos = 1000;
  table.Compute(pos, c.data(), s.data());
  const double mscale = 0.9 * (1 + 0.1 * std::log(4.0));
  // The pair that turns beta_fast = 32 times over 512 positions, and the one that turns once.
  auto corr = [&](double turns) {
    return 64 * std::log(512 / (turns * 2 * M_PI)) / (2 * std::log(10000.0));
  };
  const int64_t fast_end = static_cast<int64_t>(std::floor(corr(32))),
                slow_start = static_cast<int64_t>(std::ceil(corr(1)));
  ASSERT_LT(fast_end, slow_start);
  for (int64_t i = 0; i < 32; ++i) {
    const double theta = pos * std::pow(10000.0, -2.0 * i / 64);
    double want;
    if (i <= fast_end) {
      want = theta;  // extrapolated
    } else if (i >= slow_start) {
      want = theta * 0.25;  // interpolated
    } else {
      continue;  // on the ramp
    }
    EXPECT_NEAR(std::atan2(s[i], c[i]), std::atan2(std::sin(want), std::cos(want)), 2e-3) << i;
    EXPECT_NEAR(std::hypot(c[i], s[i]), mscale, 1e-5) << i;
  }
}

}  // namespace
}  // namespace sparrow
