// Dot products (vec_dot_scalar*.cc, kernel_table.cc and the x86 variants).
#include "engine/kernels/vec_dot.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/quantize.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

using testing::BlockElems;
using testing::RandomRow;
using testing::RandomWeightRow;
using testing::WeightTypes;

std::vector<uint8_t> QuantizeAct(TensorType weight_type, const std::vector<float>& x) {
  const TensorType at = VecDotType(weight_type);
  std::vector<uint8_t> out(RowBytes(at, static_cast<int64_t>(x.size())));
  GetKernelTable(KernelIsa::kScalar)
      .quantize_act[static_cast<int>(at)](x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

float Dot(KernelIsa isa, TensorType wt, const std::vector<uint8_t>& w,
          const std::vector<uint8_t>& a, int64_t n) {
  return GetKernelTable(isa).vec_dot[static_cast<int>(wt)](w.data(), a.data(), n);
}

// The exact (double) dot product of the dequantized rows. For the _1 types the offset term uses
// the activation block's stored sum s, as the kernel does (s is fp16, so it is not exactly the
// sum of the dequantized activations).
double ReferenceDot(TensorType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
                    int64_t n, double* abs_sum) {
  const TensorType at = VecDotType(wt);
  std::vector<float> dw(n), da(n);
  DequantizeRow(at, a.data(), da.data(), n);
  double ref = 0.0;
  *abs_sum = 0.0;
  std::vector<uint8_t> w_no_min = w;
  const bool has_min = wt == TensorType::kQ4_1 || wt == TensorType::kQ5_1;
  if (has_min) {
    const size_t bb = GetTensorTypeTraits(wt)->block_bytes;
    for (int64_t b = 0; b < n / 32; ++b) {
      uint16_t m, s;
      std::memcpy(&m, &w[b * bb + 2], 2);
      std::memcpy(&s, &a[b * sizeof(BlockQ8_1) + offsetof(BlockQ8_1, s)], 2);
      std::memset(&w_no_min[b * bb + 2], 0, 2);
      const double term = static_cast<double>(Fp16ToFp32(m)) * Fp16ToFp32(s);
      ref += term;
      *abs_sum += std::fabs(term);
    }
  }
  DequantizeRow(wt, w_no_min.data(), dw.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ref += static_cast<double>(dw[i]) * da[i];
    *abs_sum += std::fabs(static_cast<double>(dw[i]) * da[i]);
  }
  return ref;
}

std::vector<int64_t> BlockCounts(TensorType wt) {
  if (BlockElems(VecDotType(wt)) == 256 || BlockElems(wt) == 256) return {1, 2, 3, 5};
  return {1, 2, 3, 7, 8, 9, 15, 17, 33};
}

int64_t Unit(TensorType wt) {
  return std::max(BlockElems(wt), BlockElems(VecDotType(wt))) == 256 ? 256 : 32;
}

TEST(VecDotTest, ScalarMatchesDequantizedProduct) {
  for (TensorType wt : WeightTypes()) {
    for (int64_t blocks : BlockCounts(wt)) {
      const int64_t n = blocks * Unit(wt);
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        // Random-bit weights (extreme but valid blocks) and encoder-made weights.
        for (int kind = 0; kind < 2; ++kind) {
          std::vector<uint8_t> w;
          if (kind == 0) {
            w = RandomWeightRow(wt, n, seed);
          } else {
            const std::vector<float> wf = RandomRow(n, seed + 100, 0.05f);
            w.resize(RowBytes(wt, n));
            QuantizeRow(wt, wf.data(), w.data(), n);
          }
          const auto a = QuantizeAct(wt, RandomRow(n, seed + 7));
          double abs_sum;
          const double ref = ReferenceDot(wt, w, a, n, &abs_sum);
          const float got = Dot(KernelIsa::kScalar, wt, w, a, n);
          ASSERT_NEAR(got, ref, 1e-5 * abs_sum + 1e-30)
              << TensorTypeName(wt) << " n=" << n << " seed=" << seed << " kind=" << kind;
        }
      }
    }
  }
}

TEST(VecDotTest, SimdMatchesScalarBitForBit) {
  const std::vector<KernelIsa> isas = testing::SimdIsas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD variant on this CPU";
  for (KernelIsa isa : isas) {
    for (TensorType wt : WeightTypes()) {
      for (int64_t blocks : BlockCounts(wt)) {
        const int64_t n = blocks * Unit(wt);
        for (uint32_t seed = 1; seed <= 6; ++seed) {
          const auto w = RandomWeightRow(wt, n, seed * 13 + static_cast<uint32_t>(blocks));
          const auto a = QuantizeAct(wt, RandomRow(n, seed));
          const float want = Dot(KernelIsa::kScalar, wt, w, a, n);
          const float got = Dot(isa, wt, w, a, n);
          ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
              << KernelIsaName(isa) << " " << TensorTypeName(wt) << " n=" << n << " seed=" << seed
              << ": " << got << " vs " << want;
        }
      }
    }
  }
}

TEST(VecDotTest, FloatRowsOfAnyLength) {
  for (TensorType wt : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    for (int64_t n : {1, 5, 31, 33, 63, 64, 65, 200}) {
      const auto w = RandomWeightRow(wt, n, 3);
      const auto a = QuantizeAct(wt, RandomRow(n, 4));
      double abs_sum;
      const double ref = ReferenceDot(wt, w, a, n, &abs_sum);
      for (KernelIsa isa : {KernelIsa::kScalar, BestKernelIsa()}) {
        EXPECT_NEAR(Dot(isa, wt, w, a, n), ref, 1e-6 * abs_sum) << TensorTypeName(wt) << " n=" << n;
        EXPECT_EQ(Dot(isa, wt, w, a, n), Dot(KernelIsa::kScalar, wt, w, a, n));
      }
    }
  }
}

TEST(VecDotTest, KnownQ4_0Value) {
  // Every weight 1 (nibble 9, d = 1) against activations of 1: 32 * 127 * fp16(1/127).
  BlockQ4_0 w{};
  w.d = Fp32ToFp16(1.0f);
  std::memset(w.qs, 0x99, sizeof(w.qs));
  const std::vector<float> ones(32, 1.0f);
  BlockQ8_0 a;
  GetKernelTable(KernelIsa::kScalar)
      .quantize_act[static_cast<int>(TensorType::kQ8_0)](ones.data(), &a, 32);
  const float expected = Fp16ToFp32(Fp32ToFp16(1.0f / 127.0f)) * (32 * 127);
  for (KernelIsa isa : {KernelIsa::kScalar, BestKernelIsa()}) {
    EXPECT_EQ(GetKernelTable(isa).vec_dot[static_cast<int>(TensorType::kQ4_0)](&w, &a, 32),
              expected);
  }
}

TEST(VecDotTest, TypeMapping) {
  EXPECT_EQ(VecDotType(TensorType::kQ4_0), TensorType::kQ8_0);
  EXPECT_EQ(VecDotType(TensorType::kQ5_0), TensorType::kQ8_0);
  EXPECT_EQ(VecDotType(TensorType::kQ8_0), TensorType::kQ8_0);
  EXPECT_EQ(VecDotType(TensorType::kQ4_1), TensorType::kQ8_1);
  EXPECT_EQ(VecDotType(TensorType::kQ5_1), TensorType::kQ8_1);
  EXPECT_EQ(VecDotType(TensorType::kQ6_K), TensorType::kQ8_K);
  EXPECT_EQ(VecDotType(TensorType::kF16), TensorType::kF16);
  EXPECT_EQ(VecDotType(TensorType::kBF16), TensorType::kBF16);
  EXPECT_EQ(VecDotType(TensorType::kF32), TensorType::kF32);
  EXPECT_FALSE(HasVecDot(TensorType::kQ8_K));
  EXPECT_FALSE(HasVecDot(TensorType::kIQ4_NL));
  for (int isa = 0; isa < kNumKernelIsas; ++isa) {
    if (!KernelIsaSupported(static_cast<KernelIsa>(isa))) continue;
    const KernelTable& t = GetKernelTable(static_cast<KernelIsa>(isa));
    for (TensorType wt : WeightTypes()) {
      EXPECT_NE(t.vec_dot[static_cast<int>(wt)], nullptr);
      EXPECT_NE(t.quantize_act[static_cast<int>(VecDotType(wt))], nullptr);
    }
  }
}

}  // namespace
}  // namespace sparrow::kernels
