#pragma once
// Scalar IEEE half (fp16) and bfloat16 conversions, bit-exact with x86 F16C / ggml:
// f32 -> f16 and f32 -> bf16 round to nearest, ties to even. Pure functions, thread-safe.
//
// Always inlined: these headers are also used by the per-ISA files (built with -mavx2 ...), and
// an out-of-line inline copy from such a file could be the one the linker keeps for everybody.
#include <bit>
#include <cstdint>

#define SPARROW_KERNEL_INLINE [[gnu::always_inline]] inline

namespace sparrow::kernels {

SPARROW_KERNEL_INLINE float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(mag));
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

SPARROW_KERNEL_INLINE uint16_t Fp32ToFp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {
    // NaN: quieted, top mantissa bits kept (what VCVTPS2PH does).
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 and above round to infinity (65504 is the largest half; ties go to even = inf).
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    // Normal half. Re-biasing the exponent first lets a mantissa carry roll into the exponent.
    const uint32_t r = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  // Subnormal half (or zero): count units of 2^-24 with round-half-even.
  if (a <= 0x33000000u) return sign;  // <= 2^-25 rounds to zero
  const uint32_t e = a >> 23;         // 102..112 here
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

SPARROW_KERNEL_INLINE float Bf16ToFp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

SPARROW_KERNEL_INLINE uint16_t Fp32ToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace sparrow::kernels
