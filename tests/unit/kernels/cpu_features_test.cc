#include "engine/kernels/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

TEST(CpuFeaturesTest, ScalarIsAlwaysAvailable) {
  EXPECT_TRUE(KernelIsaSupported(KernelIsa::kScalar));
  EXPECT_TRUE(KernelIsaSupported(BestKernelIsa()));
  EXPECT_EQ(KernelIsaName(KernelIsa::kAvx512), "avx512");
  EXPECT_EQ(KernelIsaName(KernelIsa::kDotprod), "dotprod");
  EXPECT_EQ(KernelIsaName(KernelIsa::kAmx), "amx");
  EXPECT_EQ(KernelIsaName(KernelIsa::kI8mm), "i8mm");
}

TEST(CpuFeaturesTest, SetKernelIsaCapsToWhatTheCpuRuns) {
  testing::ScopedKernelIsa restore(ActiveKernelIsa());
  EXPECT_EQ(SetKernelIsa(KernelIsa::kScalar), KernelIsa::kScalar);
  EXPECT_EQ(ActiveKernelIsa(), KernelIsa::kScalar);
  // Asking for the top of the other architecture's ladder ends at scalar; the own one at the best.
  int reached_best = 0;
  for (KernelIsa top : {KernelIsa::kAmx, KernelIsa::kI8mm}) {
    const KernelIsa got = SetKernelIsa(top);
    EXPECT_EQ(ActiveKernelIsa(), got);
    EXPECT_TRUE(KernelIsaSupported(got));
    EXPECT_TRUE(got == BestKernelIsa() || got == KernelIsa::kScalar) << KernelIsaName(got);
    reached_best += got == BestKernelIsa();
  }
  EXPECT_GE(reached_best, 1);
  const KernelIsa avx2 = SetKernelIsa(KernelIsa::kAvx2);
  EXPECT_TRUE(avx2 == KernelIsa::kAvx2 || avx2 == KernelIsa::kScalar);
  const KernelIsa neon = SetKernelIsa(KernelIsa::kNeon);
  EXPECT_TRUE(neon == KernelIsa::kNeon || neon == KernelIsa::kScalar);
}

TEST(CpuFeaturesTest, SupportIsMonotonic) {
  // A CPU that runs a variant runs the variant it falls back to.
  for (int i = 1; i < kNumKernelIsas; ++i) {
    const auto isa = static_cast<KernelIsa>(i);
    EXPECT_NE(FallbackKernelIsa(isa), isa);
    if (KernelIsaSupported(isa)) {
      EXPECT_TRUE(KernelIsaSupported(FallbackKernelIsa(isa)));
    }
  }
  EXPECT_EQ(FallbackKernelIsa(KernelIsa::kScalar), KernelIsa::kScalar);
}

TEST(CpuFeaturesTest, DetectsTheVariantTheRunnerExpects) {
  // deploy/test-aarch64.sh sets this for each emulated CPU model (with and without SDOT), so a
  // feature check that read the wrong bit would fail here rather than silently test less.
  const char* want = std::getenv("SPARROW_EXPECT_BEST_ISA");
  if (want == nullptr) GTEST_SKIP() << "SPARROW_EXPECT_BEST_ISA not set";
  EXPECT_EQ(std::string(KernelIsaName(BestKernelIsa())), want);
}

}  // namespace
}  // namespace sparrow::kernels
