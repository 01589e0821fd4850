#pragma once
// Byte layouts of ggml's quantized blocks, as stored in GGUF files. fp16 fields are raw uint16_t
// bits (see fp16.h). Sizes must equal engine/common/tensor_type.cc's block_bytes (tested).
//
// Element order inside the blocks (x = dequantized value):
//   Q4_0: qs[j] low nibble -> element j, high nibble -> j+16; x = d*(q-8).
//   Q4_1: as Q4_0; x = d*q + m.
//   Q5_0: as Q4_0 plus bit e of qh (little endian u32) = bit 4 of element e; x = d*(q-16).
//   Q5_1: as Q5_0; x = d*q + m.
//   Q8_0: x = d*qs[e].  Q8_1: as Q8_0 plus s = d*sum(qs) (activations only).
//   Q2_K: 16 sub-blocks of 16; element e = 128n + 32k + l (l < 32) is bits 2k..2k+1 of
//         qs[32n + l]; scales[e/16] = scale (low nibble) | min (high nibble);
//         x = d*scale*q - dmin*min.
//   Q3_K: qs as Q2_K, high bit = bit e/32 of hmask[e%32] (set: q, clear: q-4); 16 6-bit
//         signed scales (value-32): low 4 bits in scales[0..7] (j<8 low nibble of scales[j],
//         j>=8 high nibble of scales[j-8]), high 2 bits at bits 2*(j/4) of scales[8 + j%4];
//         x = d*(scale-32)*q.
//   Q4_K: 8 sub-blocks of 32; element 64c + l is the low nibble of qs[32c + l], 64c+32+l the
//         high nibble; 6-bit scale/min pairs packed in scales[12] (UnpackScaleMinK4);
//         x = d*scale*q - dmin*min.
//   Q5_K: as Q4_K plus bit e/32 of qh[e%32] = bit 4 of element e.
//   Q6_K: 16 sub-blocks of 16; element 128n + 32k + l: low nibble from ql[64n + 32*(k&1) + l]
//         (k<2: low nibble, k>=2: high nibble), high 2 bits = bits 2k..2k+1 of qh[32n + l];
//         x = d*scales[e/16]*(q-32).
//   Q8_K: x = d*qs[e]; bsums[j] = sum of qs[16j..16j+15] (activations only).
#include <cstdint>

#include "engine/kernels/fp16.h"  // SPARROW_KERNEL_INLINE

namespace sparrow::kernels {

inline constexpr int kQK = 32;    // elements per block of the 32-element types
inline constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// The 6-bit scale (sc) and min (m) of sub-block j (0..7) of a Q4_K/Q5_K block.
SPARROW_KERNEL_INLINE void UnpackScaleMinK4(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The signed scale (-32..31) of sub-block j (0..15) of a Q3_K block.
SPARROW_KERNEL_INLINE int Q3KScale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace sparrow::kernels
