// Activation quantizers (act_quant_scalar.cc and their x86 twins).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/kernels/scalar_kernels.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::RandomRow;

std::vector<uint8_t> Quantize(KernelIsa isa, TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(RowBytes(type, static_cast<int64_t>(x.size())));
  GetKernelTable(isa).quantize_act[static_cast<int>(type)](x.data(), out.data(),
                                                           static_cast<int64_t>(x.size()));
  return out;
}

TEST(ActQuantTest, Q8_0RoundsHalfToEvenWithScaleAmaxOver127) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax 127: id = 1, so the products below are exact halves
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = -0.5f;
  x[5] = 0.49f;
  const auto q = Quantize(KernelIsa::kScalar, TensorType::kQ8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(b.d, Fp32ToFp16(1.0f));
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[3], -2);
  EXPECT_EQ(b.qs[4], 0);
  EXPECT_EQ(b.qs[5], 0);
}

TEST(ActQuantTest, Q8_1StoresTheScaledSum) {
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = 0.5f;
  x[2] = -0.25f;
  const auto q = Quantize(KernelIsa::kScalar, TensorType::kQ8_1, x);
  BlockQ8_1 b;
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 64);   // 63.5 -> 64 (even)
  EXPECT_EQ(b.qs[2], -32);  // -31.75 -> -32
  EXPECT_EQ(b.s, Fp32ToFp16((1.0f / 127.0f) * static_cast<float>(127 + 64 - 32)));
}

TEST(ActQuantTest, Q8_KUsesTheSignedMaximumAndFirstOnTies) {
  std::vector<float> x(256, 0.0f);
  x[0] = 1.0f;
  x[1] = -2.0f;
  x[17] = 0.5f;
  auto q = Quantize(KernelIsa::kScalar, TensorType::kQ8_K, x);
  BlockQ8_K b;
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(b.qs[0], 64);  // iscale = -127/-2 = 63.5: 63.5 -> 64 (even)
  EXPECT_EQ(b.qs[1], -127);
  EXPECT_EQ(b.qs[17], 32);  // 31.75
  EXPECT_EQ(b.d, 1.0f / (-127.0f / -2.0f));
  EXPECT_EQ(b.bsums[0], 64 - 127);
  EXPECT_EQ(b.bsums[1], 32);
  EXPECT_EQ(b.bsums[2], 0);

  // Equal magnitudes: the first one decides the sign of the scale.
  std::vector<float> tie(256, 0.0f);
  tie[3] = 2.0f;
  tie[4] = -2.0f;
  q = Quantize(KernelIsa::kScalar, TensorType::kQ8_K, tie);
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(b.qs[3], -127);
  EXPECT_EQ(b.qs[4], 127);
  EXPECT_LT(b.d, 0.0f);
}

TEST(ActQuantTest, ZeroBlocks) {
  for (TensorType t : {TensorType::kQ8_0, TensorType::kQ8_1, TensorType::kQ8_K}) {
    for (KernelIsa isa : {KernelIsa::kScalar, BestKernelIsa()}) {
      const auto q = Quantize(isa, t, std::vector<float>(256, 0.0f));
      for (uint8_t byte : q) ASSERT_EQ(byte, 0) << TensorTypeName(t);
    }
  }
}

// Rows that exercise the rounding: random values, exact .5 products, zero blocks, a block whose
// extreme value appears twice with both signs, denormals.
std::vector<float> AwkwardRow(int64_t n, uint32_t seed) {
  std::vector<float> x = RandomRow(n, seed);
  if (n >= 64) {
    for (int j = 0; j < 32; ++j)
      x[j] = static_cast<float>(j - 16) * 0.5f;  // amax 8: products k*127/16
    for (int j = 32; j < 64; ++j) x[j] = 0.0f;
  }
  if (n >= 256) {
    x[100] = 50.0f;
    x[90] = -50.0f;
    x[200] = 1e-40f;
  }
  return x;
}

TEST(ActQuantTest, SimdMatchesScalarBitForBit) {
  const std::vector<KernelIsa> isas = testing::SimdIsas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD variant on this CPU";
  struct Case {
    TensorType type;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {
      {TensorType::kQ8_0, {32, 96, 224, 256, 288, 1056}},
      {TensorType::kQ8_1, {32, 96, 224, 256, 288, 1056}},
      {TensorType::kQ8_K, {256, 768, 1792}},
      {TensorType::kF16, {1, 7, 8, 15, 16, 17, 100, 1000}},
      {TensorType::kBF16, {1, 7, 8, 15, 16, 17, 100, 1000}},
  };
  for (KernelIsa isa : isas) {
    for (const Case& c : cases) {
      for (int64_t n : c.sizes) {
        for (uint32_t seed = 1; seed <= 5; ++seed) {
          std::vector<float> x = AwkwardRow(n, seed * 31 + static_cast<uint32_t>(n));
          if (c.type == TensorType::kF16 || c.type == TensorType::kBF16) {
            // Values outside the normal range of the narrow type, and NaNs.
            const float special[] = {
                std::numeric_limits<float>::infinity(),  -70000.0f, 65519.0f, 1e-8f, -3e-6f,
                std::numeric_limits<float>::quiet_NaN(), 1e38f};
            for (size_t k = 0; k < std::size(special) && k < x.size(); ++k)
              x[(k * 7) % x.size()] = special[k];
          }
          ASSERT_EQ(Quantize(isa, c.type, x), Quantize(KernelIsa::kScalar, c.type, x))
              << KernelIsaName(isa) << " " << TensorTypeName(c.type) << " n=" << n
              << " seed=" << seed;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparrow::kernels
