#pragma once
// Dot products between one weight row and one activation row, the way ggml's CPU backend
// computes them: the f32 activations are first converted to the weight type's "vec-dot type"
// (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants, F16 for F16, BF16 for
// BF16, F32 kept for F32), then each block's integer dot product is scaled by the block scales.
//
// Every instruction-set variant gives bit-identical results: block integer sums are exact and
// the float terms are accumulated in a fixed order (32-element blocks: block b into lane b % 8;
// float rows: element i into lane i % 32 by fused multiply-add; K-quants: super-blocks in sequence;
// lanes are then summed in a fixed tree). Pure functions, thread-safe.
#include <cstddef>
#include <cstdint>

#include "engine/common/tensor_type.h"
#include "engine/kernels/cpu_features.h"

namespace sparrow::kernels {

// Activation row -> vec-dot type. `n` is a multiple of the vec-dot type's block size.
using QuantizeActFn = void (*)(const float* x, void* dst, int64_t n);
// Weight row (n elements) . activation row (n elements, already in the vec-dot type).
using VecDotFn = float (*)(const void* w, const void* act, int64_t n);

// y[t * ldy + r] = the dot product of weight row r (rows `w_stride` bytes apart) with activation
// row t (packed by the matching GemmKernel::pack_act, `act_stride` bytes apart), for r < n_rows,
// t < n_tokens; bit-identical to one VecDotFn call per pair, only faster.
using GemmFn = void (*)(const void* w, size_t w_stride, int64_t n_rows, const void* act,
                        size_t act_stride, int64_t n_tokens, int64_t n, float* y, int64_t ldy);

// A matrix kernel for one weight type. Instead of quantize_act, MatMul packs each activation row
// with pack_act (same rounding as the vec-dot type's quantizer, in a layout of the kernel's
// choosing, packed_row_bytes(n) bytes), then runs `run` on row blocks. pack_act null: `run`
// takes the activation rows in the vec-dot type as quantize_act writes them (F32: x where it
// is). Batches of fewer than min_tokens tokens loop over vec_dot instead (where that streams a
// single row faster than the kernel does).
// y[i] = rows[i] . one activation row, for i < n_rows: the rows a sparse FFN gathers
// (MatMulRows), scattered in memory, so a kernel can fetch the next ones ahead. The activations
// are packed by pack_act where `run` and pack_act are set, else the vec-dot type's row;
// bit-identical to vec_dot on each row. Null: MatMulRows hands runs of consecutive rows to
// `run`, or to vec_dot.
using GemmGatherFn = void (*)(const uint8_t* const* rows, int64_t n_rows, const void* act,
                              int64_t n, float* y);

struct GemmKernel {
  size_t (*packed_row_bytes)(int64_t n) = nullptr;
  QuantizeActFn pack_act = nullptr;
  GemmFn run = nullptr;
  int64_t min_tokens = 1;
  GemmGatherFn gather = nullptr;
};

inline constexpr int kNumTensorTypeIds = 31;  // ggml type ids 0..30

using AxpyRowFn = void (*)(float a, const void* row, float* y, int64_t n);
using AccumulateRowsFn = void (*)(const uint8_t* const* rows, size_t offset, const float* alpha,
                                  int64_t n, float* y, int64_t len);

// The kernels of one instruction-set variant; null where a type has none.
struct KernelTable {
  KernelIsa isa = KernelIsa::kScalar;
  QuantizeActFn quantize_act[kNumTensorTypeIds] = {};  // indexed by the vec-dot type's id
  VecDotFn vec_dot[kNumTensorTypeIds] = {};            // indexed by the weight type's id
  GemmKernel gemm[kNumTensorTypeIds] = {};  // by weight type; run null: loop over vec_dot
  // Attention loops (attention_ops.h).
  void (*attn_scores)(const float* q, const float* const* rows, int64_t offset, int64_t n,
                      int64_t d, float scale, float* scores) = nullptr;
  double (*exp_minus_max)(float* x, int64_t n) = nullptr;
  void (*attn_mix)(const float* w, const float* const* rows, int64_t offset, int64_t n, int64_t d,
                   float* out) = nullptr;
  // Sparse FFN accumulation (sparse_ops.h): y[i] = fma(a, x[i], y[i]), one rounding per element.
  void (*axpy)(float a, const float* x, float* y, int64_t n) = nullptr;
  // The same straight from a stored row of n elements, by weight type: y[i] = fma(a, w[i], y[i])
  // with w the row as DequantizeRow gives it. Null: dequantize, then axpy.
  AxpyRowFn axpy_row[kNumTensorTypeIds] = {};
  // Many rows at once, by weight type: for j < len (a multiple of 32), y[j] = fma(alpha[k],
  // w_k[j], y[j]) for k = 0..n-1 in order, w_k the row at rows[k] + offset bytes as
  // DequantizeRow gives it. The same bits as axpy_row row after row. Null: row after row.
  AccumulateRowsFn accumulate_rows[kNumTensorTypeIds] = {};
};

// True when `weight_type` has a dot-product kernel (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
bool HasVecDot(TensorType weight_type);

// The activation format that goes with `weight_type` (SPARROW_CHECKs HasVecDot).
TensorType VecDotType(TensorType weight_type);

// The table of `isa`; SPARROW_CHECKs KernelIsaSupported(isa).
const KernelTable& GetKernelTable(KernelIsa isa);
// The table of ActiveKernelIsa().
const KernelTable& ActiveKernelTable();

// Convenience wrappers over the active table. `act_type` must be a vec-dot type (F32, F16, BF16,
// Q8_0, Q8_1, Q8_K); dst receives RowBytes(act_type, n) bytes.
void QuantizeActivationRow(TensorType act_type, const float* x, void* dst, int64_t n);
float VecDot(TensorType weight_type, const void* w, const void* act, int64_t n);

}  // namespace sparrow::kernels
