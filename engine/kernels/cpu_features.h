#pragma once
// Which instruction-set variant of the compute kernels runs. Chosen once from the CPU's feature
// flags (CPUID on x86, the kernel's HWCAP bits on AArch64), capped by the SPARROW_KERNEL_ISA
// environment variable ("scalar", "avx2", "avx512", "amx", "neon", "dotprod", "i8mm"), and
// overridable by SetKernelIsa (tests). Thread-safe; changing the ISA while kernels run elsewhere is
// allowed but a call already dispatched keeps the variant it started with.
#include <string_view>

namespace sparrow::kernels {

enum class KernelIsa {
  kScalar = 0,   // portable C++ (also the reference the SIMD variants are tested against)
  kAvx2 = 1,     // AVX2 + FMA + F16C
  kAvx512 = 2,   // AVX-512 F/BW/VL/DQ + VNNI (+ the AVX2 set)
  kNeon = 3,     // AArch64 Advanced SIMD (every AArch64 CPU)
  kDotprod = 4,  // NEON + the ARMv8.2 int8 dot product (SDOT)
  kAmx = 5,      // AVX-512 + Intel's tile matrix unit (AMX-TILE, AMX-INT8) for prompt batches
  kI8mm = 6,     // dotprod + the ARMv8.6 int8 matrix multiply (SMMLA) for prompt batches
};
inline constexpr int kNumKernelIsas = 7;

std::string_view KernelIsaName(KernelIsa isa);

// The variant `isa` falls back to when the CPU lacks it (kScalar for kScalar): each variant
// is a superset of its fallback, on the same architecture.
KernelIsa FallbackKernelIsa(KernelIsa isa);

// Whether this binary has the variant and this CPU (and OS) can run it.
bool KernelIsaSupported(KernelIsa isa);

// The best variant the CPU supports, ignoring the environment variable and SetKernelIsa.
KernelIsa BestKernelIsa();

// The variant the dispatching entry points use now.
KernelIsa ActiveKernelIsa();

// Selects the variant; one the CPU cannot run falls back (FallbackKernelIsa) until one runs.
// Returns the variant actually selected.
KernelIsa SetKernelIsa(KernelIsa isa);

}  // namespace sparrow::kernels
