// The AVX-512 variant (compiled with -mavx512f/bw/vl/dq/vnni on top of AVX2): VNNI dot products and
// 512-bit float dots. Only reached after CPUID says the CPU has these instructions (see
// cpu_features.cc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/gemm_walk.h"
#include "engine/kernels/scalar_kernels.h"

// GCC 12 reports the _mm512_undefined_*() placeholder inside its own AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_slli_epi32, _mm512_unpacklo_epi64, ...) as "(may be) used
// uninitialized": a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace sparrow::kernels {
namespace {

#include "engine/kernels/x86/simd_helpers.inc"
//
#include "engine/kernels/x86/act_quant.inc"
//
#include "engine/kernels/x86/dot_float.inc"
//
#include "engine/kernels/x86/dot_q32.inc"
//
#include "engine/kernels/x86/dot_kquant.inc"
//
#include "engine/kernels/x86/attention_ops.inc"
//
#include "engine/kernels/x86/sparse_ops.inc"
//
#include "engine/kernels/x86/gemm_q32_pack.inc"
//
#include "engine/kernels/x86/gemm_q32_vnni.inc"
//
#include "engine/kernels/x86/gemm_float.inc"

}  // namespace

void InstallAvx512Kernels(KernelTable* t) {
  auto id = [](TensorType type) { return static_cast<int>(type); };
  t->quantize_act[id(TensorType::kF16)] = QuantizeActF16;
  t->quantize_act[id(TensorType::kBF16)] = QuantizeActBF16;
  t->quantize_act[id(TensorType::kQ8_0)] = QuantizeActQ8_0;
  t->quantize_act[id(TensorType::kQ8_1)] = QuantizeActQ8_1;
  t->quantize_act[id(TensorType::kQ8_K)] = QuantizeActQ8_K;
  t->vec_dot[id(TensorType::kF32)] = DotF32;
  t->vec_dot[id(TensorType::kF16)] = DotF16;
  t->vec_dot[id(TensorType::kBF16)] = DotBF16;
  t->vec_dot[id(TensorType::kQ4_0)] = DotQ4_0;
  t->vec_dot[id(TensorType::kQ4_1)] = DotQ4_1;
  t->vec_dot[id(TensorType::kQ5_0)] = DotQ5_0;
  t->vec_dot[id(TensorType::kQ5_1)] = DotQ5_1;
  t->vec_dot[id(TensorType::kQ8_0)] = DotQ8_0;
  t->vec_dot[id(TensorType::kQ2_K)] = DotQ2_K;
  t->vec_dot[id(TensorType::kQ3_K)] = DotQ3_K;
  t->vec_dot[id(TensorType::kQ4_K)] = DotQ4_K;
  t->vec_dot[id(TensorType::kQ5_K)] = DotQ5_K;
  t->vec_dot[id(TensorType::kQ6_K)] = DotQ6_K;
  t->gemm[id(TensorType::kQ4_K)] = {nullptr, nullptr, GemmQ4_K};  // Q8_K rows
  t->gemm[id(TensorType::kQ5_K)] = {nullptr, nullptr, GemmQ5_K};
  t->attn_scores = AttentionScores;
  t->exp_minus_max = ExpMinusMax;
  t->attn_mix = AttentionMix;
  t->axpy = Axpy;
  t->axpy_row[id(TensorType::kF32)] = AxpyRowF32;
  t->axpy_row[id(TensorType::kF16)] = AxpyRowF16;
  t->axpy_row[id(TensorType::kQ4_0)] = AxpyRowQ4_0;
  t->axpy_row[id(TensorType::kQ8_0)] = AxpyRowQ8_0;
  t->gemm[id(TensorType::kQ4_0)] = {PackedQ32RowBytes, PackActQ4_0, GemmQ4_0};
  t->gemm[id(TensorType::kQ8_0)] = {PackedQ32RowBytes, PackActQ8_0, GemmQ8_0};
  t->gemm[id(TensorType::kQ5_0)] = {PackedQ32RowBytes, PackActQ5_0, GemmQ5_0};
  // Float decode: the 256-bit dot loop streams a row about 10 % faster on Zen 4 than a tile,
  // whose two passes would also read the row twice. F16 takes F16 activation rows, F32 x.
  t->gemm[id(TensorType::kF16)] = {nullptr, nullptr, GemmF16, 2};
  t->gemm[id(TensorType::kF32)] = {nullptr, nullptr, GemmF32, 2};
}

}  // namespace sparrow::kernels
