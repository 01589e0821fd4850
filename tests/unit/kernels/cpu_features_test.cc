#include "engine/kernels/cpu_features.h"

#include <gtest/gtest.h>

#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

TEST(CpuFeaturesTest, ScalarIsAlwaysAvailable) {
  EXPECT_TRUE(KernelIsaSupported(KernelIsa::kScalar));
  EXPECT_TRUE(KernelIsaSupported(BestKernelIsa()));
  EXPECT_EQ(KernelIsaName(KernelIsa::kAvx512), "avx512");
}

TEST(CpuFeaturesTest, SetKernelIsaCapsToWhatTheCpuRuns) {
  testing::ScopedKernelIsa restore(ActiveKernelIsa());
  EXPECT_EQ(SetKernelIsa(KernelIsa::kScalar), KernelIsa::kScalar);
  EXPECT_EQ(ActiveKernelIsa(), KernelIsa::kScalar);
  const KernelIsa top = SetKernelIsa(KernelIsa::kAvx512);
  EXPECT_EQ(top, BestKernelIsa());
  EXPECT_EQ(ActiveKernelIsa(), top);
  const KernelIsa avx2 = SetKernelIsa(KernelIsa::kAvx2);
  EXPECT_LE(static_cast<int>(avx2), static_cast<int>(KernelIsa::kAvx2));
  EXPECT_TRUE(KernelIsaSupported(avx2));
}

TEST(CpuFeaturesTest, SupportIsMonotonic) {
  // A CPU that runs a variant runs every variant below it.
  for (int i = 1; i < kNumKernelIsas; ++i) {
    if (KernelIsaSupported(static_cast<KernelIsa>(i))) {
      EXPECT_TRUE(KernelIsaSupported(static_cast<KernelIsa>(i - 1)));
    }
  }
}

}  // namespace
}  // namespace sparrow::kernels
