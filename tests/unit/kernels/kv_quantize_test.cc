// KV rows as llama.cpp's CPU backend writes them: the legacy block types' reference rounding
// (half a step up, truncated), the activation quantizers' for q8_0, and every type close to
// what was written.
#include "engine/kernels/kv_quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/vec_dot.h"
#include "tests/unit/kernels/kernel_test_util.h"

namespace sparrow::kernels {
namespace {

std::vector<float> RoundTrip(TensorType type, const std::vector<float>& x) {
  std::vector<uint8_t> row(RowBytes(type, static_cast<int64_t>(x.size())));
  QuantizeKvRow(type, x.data(), row.data(), static_cast<int64_t>(x.size()));
  std::vector<float> back(x.size());
  DequantizeRow(type, row.data(), back.data(), static_cast<int64_t>(x.size()));
  return back;
}

// A block of 32 whose scale comes out as 1: q4_0's d = max / -8 with max = -8.
TEST(KvQuantizeTest, Q4_0HalvesGoUpAsLlamaCppRounds) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;
  x[1] = 0.5f;   // level 8.5 + 0.5 = 9: +1 (round half to even would give 0)
  x[2] = -0.5f;  // 8.0: 0
  x[3] = 2.5f;   // 11: +3
  x[4] = 7.9f;   // 16.4 -> capped at 15: +7
  const std::vector<float> back = RoundTrip(TensorType::kQ4_0, x);
  EXPECT_EQ(back[0], -8.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], 0.0f);
  EXPECT_EQ(back[3], 3.0f);
  EXPECT_EQ(back[4], 7.0f);
}

// q4_1's d = (max - min) / 15, m = min: with min 0 and max 15 the step is 1.
TEST(KvQuantizeTest, Q4_1OffsetsFromTheMinimum) {
  std::vector<float> x(32, 0.0f);
  x[0] = 15.0f;
  x[1] = 2.5f;   // 3
  x[2] = 2.49f;  // 2
  const std::vector<float> back = RoundTrip(TensorType::kQ4_1, x);
  EXPECT_EQ(back[0], 15.0f);
  EXPECT_EQ(back[1], 3.0f);
  EXPECT_EQ(back[2], 2.0f);
}

TEST(KvQuantizeTest, PlainTypesAndQ8_0AreTheActivationRounding) {
  const std::vector<float> x = testing::RandomRow(96, 3);
  for (TensorType type : {TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0}) {
    std::vector<uint8_t> a(RowBytes(type, 96)), b(RowBytes(type, 96));
    QuantizeKvRow(type, x.data(), a.data(), 96);
    QuantizeActivationRow(type, x.data(), b.data(), 96);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << TensorTypeName(type);
  }
  std::vector<uint16_t> h(96);
  QuantizeKvRow(TensorType::kF16, x.data(), h.data(), 96);
  for (int i = 0; i < 96; ++i) EXPECT_EQ(h[i], Fp32ToFp16(x[i])) << i;
}

// Every type within half a step of its block (plus the fp16 rounding of the scale); q4_0 and
// q5_0 within a step, their top level being cut off on the side opposite the largest value.
TEST(KvQuantizeTest, EveryTypeStaysWithinHalfAStep) {
  const std::vector<float> x = testing::RandomRow(256, 9);
  for (TensorType type :
       {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
        TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1}) {
    ASSERT_TRUE(CanQuantizeKvRow(type));
    const std::vector<float> back = RoundTrip(type, x);
    const int levels = type == TensorType::kQ8_0                                ? 254
                       : type == TensorType::kQ4_0 || type == TensorType::kQ4_1 ? 15
                       : type == TensorType::kQ5_0 || type == TensorType::kQ5_1 ? 31
                                                                                : 0;
    for (int b = 0; b < 256 / 32; ++b) {
      float lo = x[b * 32], hi = x[b * 32], amax = 0;
      for (int j = 0; j < 32; ++j) {
        lo = std::min(lo, x[b * 32 + j]);
        hi = std::max(hi, x[b * 32 + j]);
        amax = std::max(amax, std::fabs(x[b * 32 + j]));
      }
      const bool affine = type == TensorType::kQ4_1 || type == TensorType::kQ5_1;
      const float range = affine ? hi - lo : 2 * amax;
      for (int j = 0; j < 32; ++j) {
        const float v = x[b * 32 + j];
        const bool clipped = type == TensorType::kQ4_0 || type == TensorType::kQ5_0;
        const float tol = levels > 0 ? range / levels * (clipped ? 1.01f : 0.51f) + 1e-3f * amax
                                     : std::fabs(v) * (type == TensorType::kBF16 ? 4e-3f : 1e-3f);
        ASSERT_NEAR(back[b * 32 + j], v, tol) << TensorTypeName(type) << " " << b * 32 + j;
      }
    }
  }
  EXPECT_FALSE(CanQuantizeKvRow(TensorType::kQ4_K));
}

}  // namespace
}  // namespace sparrow::kernels
