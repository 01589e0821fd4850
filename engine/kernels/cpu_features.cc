#include "engine/kernels/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <string>

#if defined(SPARROW_KERNELS_X86)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(SPARROW_KERNELS_ARM)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

namespace sparrow::kernels {
namespace {

#if defined(SPARROW_KERNELS_X86)
// AMX needs three yeses: the CPU has the tiles (CPUID leaf 7: AMX-TILE, AMX-INT8), the OS
// saves their state (XCR0 bits 17 and 18), and Linux lets this process use them: the tile data
// is 8 KiB of state per thread, so it must be asked for once (ARCH_REQ_XCOMP_PERM, Linux 5.16).
bool AmxUsable() {
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false;  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return false;
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}
#endif

bool CpuHas(KernelIsa isa) {
  if (isa == KernelIsa::kScalar) return true;
#if defined(SPARROW_KERNELS_X86)
  // __builtin_cpu_supports also checks that the OS saves the AVX/AVX-512 register state.
  switch (isa) {
    case KernelIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case KernelIsa::kAvx512:
      return CpuHas(KernelIsa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
    case KernelIsa::kAmx:
      return CpuHas(KernelIsa::kAvx512) && AmxUsable();
    default:
      return false;
  }
#elif defined(SPARROW_KERNELS_ARM)
  // The kernel reports what user space may use; qemu-aarch64 reports its emulated CPU's set.
  const unsigned long hwcap = getauxval(AT_HWCAP);
  switch (isa) {
    case KernelIsa::kNeon:
      return (hwcap & HWCAP_ASIMD) != 0;
    case KernelIsa::kDotprod:
      return (hwcap & HWCAP_ASIMD) != 0 && (hwcap & HWCAP_ASIMDDP) != 0;
    case KernelIsa::kI8mm:
      return CpuHas(KernelIsa::kDotprod) && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
    default:
      return false;
  }
#else
  return false;
#endif
}

KernelIsa Cap(KernelIsa wanted) {
  while (!CpuHas(wanted)) wanted = FallbackKernelIsa(wanted);
  return wanted;
}

KernelIsa FromEnvironment() {
  const KernelIsa best = BestKernelIsa();
  const char* env = std::getenv("SPARROW_KERNEL_ISA");
  if (env == nullptr) return best;
  const std::string v(env);
  for (int i = 0; i < kNumKernelIsas; ++i) {
    if (v == KernelIsaName(static_cast<KernelIsa>(i))) return Cap(static_cast<KernelIsa>(i));
  }
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
    case KernelIsa::kNeon:
      return "neon";
    case KernelIsa::kDotprod:
      return "dotprod";
    case KernelIsa::kAmx:
      return "amx";
    case KernelIsa::kI8mm:
      return "i8mm";
  }
  return "unknown";
}

KernelIsa FallbackKernelIsa(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return KernelIsa::kAvx2;
    case KernelIsa::kAmx:
      return KernelIsa::kAvx512;
    case KernelIsa::kI8mm:
      return KernelIsa::kDotprod;
    case KernelIsa::kDotprod:
      return KernelIsa::kNeon;
    default:
      return KernelIsa::kScalar;
  }
}

bool KernelIsaSupported(KernelIsa isa) {
  return CpuHas(isa);
}

KernelIsa BestKernelIsa() {
  // The top of each architecture's ladder; only one of them can be supported.
  for (KernelIsa top : {KernelIsa::kAmx, KernelIsa::kI8mm}) {
    const KernelIsa best = Cap(top);
    if (best != KernelIsa::kScalar) return best;
  }
  return KernelIsa::kScalar;
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
