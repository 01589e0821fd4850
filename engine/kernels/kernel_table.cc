// Builds one KernelTable per instruction-set variant (the scalar kernels, overridden by the
// SIMD ones the variant has) and dispatches the convenience wrappers of vec_dot.h.
#include "engine/common/check.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/scalar_kernels.h"
#include "engine/kernels/vec_dot.h"

namespace sparrow::kernels {

#if defined(SPARROW_KERNELS_X86)
// Defined in x86/kernels_avx2.cc, x86/kernels_avx512.cc and x86/kernels_amx.cc; they only
// override entries.
void InstallAvx2Kernels(KernelTable* t);
void InstallAvx512Kernels(KernelTable* t);
void InstallAmxKernels(KernelTable* t);
#endif
#if defined(SPARROW_KERNELS_ARM)
// Defined in arm/kernels_neon.cc, arm/kernels_dotprod.cc and arm/kernels_i8mm.cc.
void InstallNeonKernels(KernelTable* t);
void InstallDotprodKernels(KernelTable* t);
void InstallI8mmKernels(KernelTable* t);
#endif

namespace scalar {

void InstallScalarKernels(KernelTable* t) {
  auto id = [](TensorType type) { return static_cast<int>(type); };
  t->quantize_act[id(TensorType::kF32)] = QuantizeActF32;
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
  t->attn_scores = AttentionScores;
  t->exp_minus_max = ExpMinusMax;
  t->attn_mix = AttentionMix;
  t->axpy = Axpy;
  t->axpy_row[id(TensorType::kF32)] = AxpyRowF32;
  t->axpy_row[id(TensorType::kF16)] = AxpyRowF16;
  t->axpy_row[id(TensorType::kQ4_0)] = AxpyRowQ4_0;
  t->axpy_row[id(TensorType::kQ8_0)] = AxpyRowQ8_0;
  t->accumulate_rows[id(TensorType::kQ4_0)] = AccumulateRowsQ4_0;
}

}  // namespace scalar

namespace {

struct AllTables {
  KernelTable tables[kNumKernelIsas];

  AllTables() {
    for (int i = 0; i < kNumKernelIsas; ++i) {
      tables[i].isa = static_cast<KernelIsa>(i);
      scalar::InstallScalarKernels(&tables[i]);
    }
    // The installers live in the files built with their instruction set's flags, so even they
    // may use its instructions (ASan's stack poisoning does: AVX-512 stores). Only a CPU that has
    // the instructions may run them; the other tables stay unused (GetKernelTable refuses them).
    auto install = [this](KernelIsa isa, void (*fn)(KernelTable*)) {
      if (KernelIsaSupported(isa)) fn(&tables[static_cast<int>(isa)]);
    };
#if defined(SPARROW_KERNELS_X86)
    install(KernelIsa::kAvx2, InstallAvx2Kernels);
    install(KernelIsa::kAvx512, InstallAvx2Kernels);
    install(KernelIsa::kAvx512, InstallAvx512Kernels);
    install(KernelIsa::kAmx, InstallAvx2Kernels);
    install(KernelIsa::kAmx, InstallAvx512Kernels);
    install(KernelIsa::kAmx, InstallAmxKernels);
#endif
#if defined(SPARROW_KERNELS_ARM)
    install(KernelIsa::kNeon, InstallNeonKernels);
    install(KernelIsa::kDotprod, InstallDotprodKernels);
    install(KernelIsa::kI8mm, InstallI8mmKernels);
#endif
    (void)install;
  }
};

const AllTables& Tables() {
  static const AllTables tables;
  return tables;
}

}  // namespace

bool HasVecDot(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ8_0:
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
      return true;
    default:
      return false;
  }
}

TensorType VecDotType(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return weight_type;
    case TensorType::kQ4_0:
    case TensorType::kQ5_0:
    case TensorType::kQ8_0:
      return TensorType::kQ8_0;
    case TensorType::kQ4_1:
    case TensorType::kQ5_1:
      return TensorType::kQ8_1;
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
      return TensorType::kQ8_K;
    default:
      SPARROW_CHECK(false && "weight type without a dot-product kernel");
  }
  return TensorType::kF32;
}

const KernelTable& GetKernelTable(KernelIsa isa) {
  SPARROW_CHECK(KernelIsaSupported(isa));
  return Tables().tables[static_cast<int>(isa)];
}

const KernelTable& ActiveKernelTable() {
  return Tables().tables[static_cast<int>(ActiveKernelIsa())];
}

void QuantizeActivationRow(TensorType act_type, const float* x, void* dst, int64_t n) {
  const auto i = static_cast<uint32_t>(act_type);
  SPARROW_CHECK(i < kNumTensorTypeIds);
  const QuantizeActFn fn = ActiveKernelTable().quantize_act[i];
  SPARROW_CHECK(fn != nullptr);
  fn(x, dst, n);
}

float VecDot(TensorType weight_type, const void* w, const void* act, int64_t n) {
  SPARROW_CHECK(HasVecDot(weight_type));
  return ActiveKernelTable().vec_dot[static_cast<int>(weight_type)](w, act, n);
}

}  // namespace sparrow::kernels
