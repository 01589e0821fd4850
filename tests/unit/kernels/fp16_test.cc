#include "engine/kernels/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace sparrow::kernels {
namespace {

uint32_t Bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float FromBits(uint32_t b) {
  return std::bit_cast<float>(b);
}

TEST(Fp16Test, KnownValues) {
  EXPECT_EQ(Fp32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToFp16(1.0f), 0x3c00);
  EXPECT_EQ(Fp32ToFp16(-2.0f), 0xc000);
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65519.996f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7c00);  // tie between 65504 and "65536" goes to even (inf)
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Fp32ToFp16(0x1p-24f), 0x0001);                 // smallest subnormal
  EXPECT_EQ(Fp32ToFp16(0x1p-25f), 0x0000);                 // exact half of it: ties to even (0)
  EXPECT_EQ(Fp32ToFp16(FromBits(Bits(0x1p-25f) + 1)), 1);  // just above the tie
  EXPECT_EQ(Fp32ToFp16(0x1.8p-24f), 0x0002);               // 1.5 units: ties to even (2)
  EXPECT_EQ(Fp32ToFp16(0x1p-14f), 0x0400);                 // smallest normal
  EXPECT_EQ(Fp32ToFp16(0x1.ff8p-15f), 0x03ff);             // largest subnormal
  EXPECT_EQ(Fp32ToFp16(0x1.ffcp-15f), 0x0400);             // tie with 2^-14: odd rounds up
  EXPECT_EQ(Fp32ToFp16(1.0f + 0x1p-11f), 0x3c00);          // tie, even stays
  EXPECT_EQ(Fp32ToFp16(1.0f + 3 * 0x1p-11f), 0x3c02);      // tie, odd rounds up
  EXPECT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(std::numeric_limits<float>::quiet_NaN()))));

  EXPECT_EQ(Fp16ToFp32(0x3c00), 1.0f);
  EXPECT_EQ(Fp16ToFp32(0x0001), 0x1p-24f);
  EXPECT_EQ(Fp16ToFp32(0x7bff), 65504.0f);
  EXPECT_EQ(Fp16ToFp32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(Bits(Fp16ToFp32(0x8000)), 0x80000000u);
}

TEST(Fp16Test, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(Fp32ToFp16(f), h) << std::hex << h;
  }
}

#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t HardwareToHalf(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float HardwareFromHalf(uint16_t h) {
  return _cvtsh_ss(h);
}
bool HasHardwareHalf() {
  return __builtin_cpu_supports("f16c");
}
#else
// AArch64 converts with FCVT in the default rounding mode (to nearest, ties to even).
uint16_t HardwareToHalf(float f) {
  const __fp16 h = static_cast<__fp16>(f);
  return std::bit_cast<uint16_t>(h);
}
float HardwareFromHalf(uint16_t h) {
  return static_cast<float>(std::bit_cast<__fp16>(h));
}
bool HasHardwareHalf() {
  return true;
}
#endif

TEST(Fp16Test, MatchesTheCpusConversionInstructions) {
  if (!HasHardwareHalf()) GTEST_SKIP() << "no F16C";
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float hw = HardwareFromHalf(static_cast<uint16_t>(h));
    const float sw = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(sw));
    } else {
      ASSERT_EQ(Bits(sw), Bits(hw)) << std::hex << h;
    }
  }
  // A stride through all float bit patterns (NaNs included), plus dense sweeps around the
  // subnormal, normal and overflow thresholds.
  auto check = [](uint32_t b) {
    const float f = FromBits(b);
    ASSERT_EQ(Fp32ToFp16(f), HardwareToHalf(f)) << std::hex << b;
  };
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) check(static_cast<uint32_t>(b));
  for (uint32_t center : {0x33000000u, 0x33800000u, 0x38800000u, 0x477ff000u, 0x7f800000u}) {
    for (uint32_t d = 0; d < 20000; ++d) {
      check(center + d - 10000);
      check((center + d - 10000) | 0x80000000u);
    }
  }
}
#endif

TEST(Bf16Test, KnownValuesAndRounding) {
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Fp32ToBf16(-2.0f), 0xc000);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x7fc00001u)), 0x7fc0);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x7f800001u)), 0x7fc0);  // signalling NaN comes out quiet
  EXPECT_EQ(Bf16ToFp32(0x3f80), 1.0f);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(Fp32ToBf16(f), h);
  }
}

}  // namespace
}  // namespace sparrow::kernels
