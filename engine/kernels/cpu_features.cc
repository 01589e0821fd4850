#include "engine/kernels/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace sparrow::kernels {
namespace {

bool CpuHas(KernelIsa isa) {
#if defined(SPARROW_KERNELS_X86)
  // __builtin_cpu_supports also checks that the OS saves the AVX/AVX-512 register state.
  switch (isa) {
    case KernelIsa::kScalar:
      return true;
    case KernelIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case KernelIsa::kAvx512:
      return CpuHas(KernelIsa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == KernelIsa::kScalar;
#endif
}

KernelIsa Cap(KernelIsa wanted) {
  int i = static_cast<int>(wanted);
  while (i > 0 && !CpuHas(static_cast<KernelIsa>(i))) --i;
  return static_cast<KernelIsa>(i);
}

KernelIsa FromEnvironment() {
  const KernelIsa best = BestKernelIsa();
  const char* env = std::getenv("SPARROW_KERNEL_ISA");
  if (env == nullptr) return best;
  const std::string v(env);
  if (v == "scalar") return KernelIsa::kScalar;
  if (v == "avx2") return Cap(KernelIsa::kAvx2);
  if (v == "avx512") return Cap(KernelIsa::kAvx512);
  return best;  // unknown names are ignored rather than fatal: this is a tuning knob
}

std::atomic<int>& ActiveSlot() {
  static std::atomic<int> slot{static_cast<int>(FromEnvironment())};
  return slot;
}

}  // namespace

std::string_view KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kScalar:
      return "scalar";
    case KernelIsa::kAvx2:
      return "avx2";
    case KernelIsa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

bool KernelIsaSupported(KernelIsa isa) {
  return CpuHas(isa);
}

KernelIsa BestKernelIsa() {
  return Cap(KernelIsa::kAvx512);
}

KernelIsa ActiveKernelIsa() {
  return static_cast<KernelIsa>(ActiveSlot().load(std::memory_order_relaxed));
}

KernelIsa SetKernelIsa(KernelIsa isa) {
  const KernelIsa chosen = Cap(isa);
  ActiveSlot().store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

}  // namespace sparrow::kernels
