// The ARMv8.2 variant (compiled with -march=armv8.2-a+dotprod): the same kernels with SDOT for
// the int8 dot products. Only reached when the kernel's HWCAP says the CPU has it.
#define SPARROW_NEON_INSTALL InstallDotprodKernels
#include "engine/kernels/arm/neon_variant.inc"
