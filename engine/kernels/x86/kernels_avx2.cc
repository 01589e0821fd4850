// The AVX2 + FMA + F16C variant (compiled with -mavx2 -mfma -mf16c).
// Only reached after CPUID says the CPU has these instructions (see cpu_features.cc).
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
#include "engine/kernels/x86/gemm_q32_avx2.inc"

}  // namespace

void InstallAvx2Kernels(KernelTable* t) {
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
  t->gemm[id(TensorType::kQ4_0)] = {PackedQ32RowBytes, PackActQ4_0, GemmQ32Avx2<BlockQ4_0>, 1,
                                    GatherQ32Avx2<BlockQ4_0>};
  t->gemm[id(TensorType::kQ8_0)] = {PackedQ32RowBytes, PackActQ8_0, GemmQ32Avx2<BlockQ8_0>, 1,
                                    GatherQ32Avx2<BlockQ8_0>};
  t->attn_scores = AttentionScores;
  t->exp_minus_max = ExpMinusMax;
  t->attn_mix = AttentionMix;
  t->axpy = Axpy;
  t->axpy_row[id(TensorType::kF32)] = AxpyRowF32;
  t->axpy_row[id(TensorType::kF16)] = AxpyRowF16;
  t->axpy_row[id(TensorType::kQ4_0)] = AxpyRowQ4_0;
  t->axpy_row[id(TensorType::kQ8_0)] = AxpyRowQ8_0;
  t->accumulate_rows[id(TensorType::kF32)] = AccumulateRowsT<UnpackF32>;
  t->accumulate_rows[id(TensorType::kF16)] = AccumulateRowsT<UnpackF16>;
  t->accumulate_rows[id(TensorType::kQ4_0)] = AccumulateRowsQ4_0Int;
  t->accumulate_rows[id(TensorType::kQ8_0)] = AccumulateRowsT<UnpackQ8_0>;
}

}  // namespace sparrow::kernels
