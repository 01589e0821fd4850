#include "engine/kernels/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/quant_blocks.h"
#include "engine/model/gguf_file.h"
#include "tests/util/test_paths.h"

namespace sparrow::kernels {
namespace {

template <typename Block>
std::vector<float> Decode(TensorType type, const Block& b, int n) {
  std::vector<float> out(n);
  DequantizeRow(type, &b, out.data(), n);
  return out;
}

TEST(DequantizeTest, BlockSizesMatchTensorTypeTraits) {
  EXPECT_EQ(sizeof(BlockQ4_0), GetTensorTypeTraits(TensorType::kQ4_0)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_1), GetTensorTypeTraits(TensorType::kQ4_1)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_0), GetTensorTypeTraits(TensorType::kQ5_0)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_1), GetTensorTypeTraits(TensorType::kQ5_1)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_0), GetTensorTypeTraits(TensorType::kQ8_0)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_1), GetTensorTypeTraits(TensorType::kQ8_1)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ2_K), GetTensorTypeTraits(TensorType::kQ2_K)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ3_K), GetTensorTypeTraits(TensorType::kQ3_K)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_K), GetTensorTypeTraits(TensorType::kQ4_K)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_K), GetTensorTypeTraits(TensorType::kQ5_K)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ6_K), GetTensorTypeTraits(TensorType::kQ6_K)->block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_K), GetTensorTypeTraits(TensorType::kQ8_K)->block_bytes);
  EXPECT_EQ(RowBytes(TensorType::kQ4_K, 512), 288u);
  EXPECT_EQ(RowBytes(TensorType::kF16, 7), 14u);
}

TEST(DequantizeTest, FloatTypes) {
  const uint16_t h[2] = {0x3c00, 0xc100};  // 1, -2.5
  float out[2];
  DequantizeRow(TensorType::kF16, h, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
  const uint16_t b[2] = {0x3f80, 0xc020};  // 1, -2.5
  DequantizeRow(TensorType::kBF16, b, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.5f);
}

TEST(DequantizeTest, Q4_0AndQ4_1) {
  BlockQ4_0 a{};
  a.d = Fp32ToFp16(0.5f);
  a.qs[0] = 0x1f;  // element 0 = 15, element 16 = 1
  auto y = Decode(TensorType::kQ4_0, a, 32);
  EXPECT_EQ(y[0], 3.5f);
  EXPECT_EQ(y[16], -3.5f);
  EXPECT_EQ(y[1], -4.0f);  // nibble 0 -> -8 * 0.5

  BlockQ4_1 b{};
  b.d = Fp32ToFp16(0.5f);
  b.m = Fp32ToFp16(-1.0f);
  b.qs[1] = 0x23;
  y = Decode(TensorType::kQ4_1, b, 32);
  EXPECT_EQ(y[1], 0.5f);   // 3 * 0.5 - 1
  EXPECT_EQ(y[17], 0.0f);  // 2 * 0.5 - 1
  EXPECT_EQ(y[0], -1.0f);
}

TEST(DequantizeTest, Q5_0AndQ5_1) {
  BlockQ5_0 a{};
  a.d = Fp32ToFp16(1.0f);
  const uint32_t qh = (1u << 0) | (1u << 17);
  std::memcpy(a.qh, &qh, 4);
  a.qs[1] = 0x10;  // element 1 low nibble 0, element 17 low nibble 1
  auto y = Decode(TensorType::kQ5_0, a, 32);
  EXPECT_EQ(y[0], 0.0f);    // 16 - 16
  EXPECT_EQ(y[1], -16.0f);  // 0 - 16
  EXPECT_EQ(y[16], -16.0f);
  EXPECT_EQ(y[17], 1.0f);  // (1 | 16) - 16

  BlockQ5_1 b{};
  b.d = Fp32ToFp16(2.0f);
  b.m = Fp32ToFp16(0.5f);
  std::memcpy(b.qh, &qh, 4);
  b.qs[1] = 0x10;
  y = Decode(TensorType::kQ5_1, b, 32);
  EXPECT_EQ(y[0], 32.5f);  // 16 * 2 + 0.5
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[17], 34.5f);  // 17 * 2 + 0.5
}

TEST(DequantizeTest, Q8_0AndActivationTypes) {
  BlockQ8_0 a{};
  a.d = Fp32ToFp16(0.25f);
  a.qs[3] = -7;
  auto y = Decode(TensorType::kQ8_0, a, 32);
  EXPECT_EQ(y[3], -1.75f);
  EXPECT_EQ(y[4], 0.0f);

  BlockQ8_K k{};
  k.d = 0.5f;
  k.qs[10] = -3;
  k.qs[255] = 127;
  y = Decode(TensorType::kQ8_K, k, 256);
  EXPECT_EQ(y[10], -1.5f);
  EXPECT_EQ(y[255], 63.5f);
}

TEST(DequantizeTest, Q2_K) {
  BlockQ2_K b{};
  b.d = Fp32ToFp16(1.0f);
  b.dmin = Fp32ToFp16(0.5f);
  b.scales[0] = 0x23;  // sub-block 0: scale 3, min 2
  b.scales[2] = 0x01;
  b.scales[4] = 0x12;
  b.scales[6] = 0x0f;
  b.scales[8] = 0x05;
  b.qs[0] = 0xe4;   // elements 0, 32, 64, 96 = 0, 1, 2, 3
  b.qs[32] = 0x03;  // element 128 = 3
  auto y = Decode(TensorType::kQ2_K, b, 256);
  EXPECT_EQ(y[0], -1.0f);   // 3*0 - 0.5*2
  EXPECT_EQ(y[32], 1.0f);   // 1*1 - 0
  EXPECT_EQ(y[64], 3.5f);   // 2*2 - 0.5*1
  EXPECT_EQ(y[96], 45.0f);  // 15*3
  EXPECT_EQ(y[128], 15.0f);
}

TEST(DequantizeTest, Q3_K) {
  BlockQ3_K b{};
  b.d = Fp32ToFp16(1.0f);
  // Sub-block 0: stored 33 (scale 1): low nibble in scales[0], high bits 2 in scales[8] bits 0-1.
  b.scales[0] = 0x01;
  b.scales[8] = 0x02;
  // Sub-block 9: stored 0 (scale -32); everything else stored 0 too except as set above.
  b.qs[0] = 0x03;
  b.hmask[0] = 0x01;   // element 0: q = 3 (high bit set)
  b.qs[48] = 0x01;     // element 144 = 128 + 16: low bits 1
  b.hmask[16] = 0x10;  // high bit of element 144 (bit 144/32 = 4)
  auto y = Decode(TensorType::kQ3_K, b, 256);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], -4.0f);     // low 0, no high bit: -4
  EXPECT_EQ(y[144], -32.0f);  // scale -32 * q 1
  EXPECT_EQ(y[145], 128.0f);  // scale -32 * q -4
}

TEST(DequantizeTest, Q4_KAndQ5_K) {
  BlockQ4_K b{};
  b.d = Fp32ToFp16(1.0f);
  b.dmin = Fp32ToFp16(1.0f);
  b.scales[0] = 2;  // sub-block 0 scale
  b.scales[4] = 3;  // sub-block 0 min
  // Sub-block 5: scale 21 = 0b01'0101, min 34 = 0b10'0010.
  b.scales[9] = 0x25;
  b.scales[1] = 0x40;
  b.scales[5] = 0x80;
  b.qs[0] = 0x07;
  b.qs[64 + 3] = 0xa0;  // element 160 + 3 (sub-block 5 = high nibbles of chunk 2)
  auto y = Decode(TensorType::kQ4_K, b, 256);
  EXPECT_EQ(y[0], 11.0f);     // 2*7 - 3
  EXPECT_EQ(y[163], 176.0f);  // 21*10 - 34
  EXPECT_EQ(y[32], 0.0f);     // sub-block 1: scale 0, min 0

  BlockQ5_K c{};
  c.d = b.d;
  c.dmin = b.dmin;
  std::memcpy(c.scales, b.scales, 12);
  std::memcpy(c.qs, b.qs, 128);
  c.qh[3] = 1 << 5;  // high bit of element 163 (sub-block 5)
  c.qh[0] = 1;       // high bit of element 0
  y = Decode(TensorType::kQ5_K, c, 256);
  EXPECT_EQ(y[0], 43.0f);     // 2*23 - 3
  EXPECT_EQ(y[163], 512.0f);  // 21*26 - 34
}

TEST(DequantizeTest, Q6_K) {
  BlockQ6_K b{};
  b.d = Fp32ToFp16(0.5f);
  b.scales[0] = -2;
  b.scales[6] = 3;
  b.scales[12] = 1;
  b.ql[0] = 0x05;
  b.qh[0] = 0x02;       // element 0 = 5 | 2<<4 = 37 -> 5
  b.ql[32 + 4] = 0xf0;  // element 100 = 96 + 4: high nibble of ql[36]
  b.qh[4] = 0xc0;       // its high bits (bits 6-7) = 3 -> 63 -> 31
  b.ql[64 + 8] = 0x90;  // element 200 = 128 + 64 + 8: high nibble of ql[72]
  b.qh[32 + 8] = 0x20;  // bits 4-5 = 2 -> 9 | 32 = 41 -> 9
  auto y = Decode(TensorType::kQ6_K, b, 256);
  EXPECT_EQ(y[0], -5.0f);    // 0.5 * -2 * 5
  EXPECT_EQ(y[100], 46.5f);  // 0.5 * 3 * 31
  EXPECT_EQ(y[200], 4.5f);   // 0.5 * 1 * 9
  EXPECT_EQ(y[1], 32.0f);    // 0.5 * -2 * -32
}

// llama.cpp's own quantizations of the synthetic model, dequantized here, must be close to the
// f32 weights they were made from; a wrong element order would give an error near sqrt(2).
TEST(DequantizeTest, LlamaCppQuantizedFilesMatchTheirF32Source) {
  const std::string f32_path = sparrow::testing::ModelPath("synthetic/synth-llama-f32.gguf");
  if (!sparrow::testing::FileExists(f32_path)) GTEST_SKIP() << "missing " << f32_path;
  auto f32 = GgufFile::Open(f32_path);
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  struct Case {
    const char* file;
    TensorType type;
    double max_rel_rmse;
  };
  const Case cases[] = {
      {"synth-llama-q8_0.gguf", TensorType::kQ8_0, 0.01},
      {"synth-llama-q4_0.gguf", TensorType::kQ4_0, 0.15},
      {"synth-llama-q4_k_m.gguf", TensorType::kQ4_K, 0.12},
      {"synth-llama-q5_k_m.gguf", TensorType::kQ5_K, 0.06},
      {"synth-llama-q6_k.gguf", TensorType::kQ6_K, 0.03},
      {"synth-llama-q4_k_m.gguf", TensorType::kQ6_K, 0.03},
  };
  for (const Case& c : cases) {
    auto q = GgufFile::Open(sparrow::testing::ModelPath(std::string("synthetic/") + c.file));
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    int checked = 0;
    for (const GgufTensorInfo& t : (*q)->tensors()) {
      if (t.type != c.type) continue;
      const GgufTensorInfo* ref = (*f32)->FindTensor(t.name);
      ASSERT_NE(ref, nullptr) << t.name;
      ASSERT_EQ(ref->n_elements, t.n_elements);
      std::vector<float> got(t.n_elements);
      for (uint64_t r = 0; r < t.rows(); ++r) {
        DequantizeRow(t.type, t.data + r * t.row_bytes(), got.data() + r * t.dims[0], t.dims[0]);
      }
      const auto* want = reinterpret_cast<const float*>(ref->data);
      double err = 0, norm = 0;
      for (uint64_t i = 0; i < t.n_elements; ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
      }
      EXPECT_LT(std::sqrt(err / norm), c.max_rel_rmse) << c.file << " " << t.name;
      ++checked;
    }
    EXPECT_GT(checked, 0) << c.file;
  }
}

}  // namespace
}  // namespace sparrow::kernels
