// The baseline AArch64 variant (compiled with -march=armv8-a): NEON, integer dot products by
// widening multiplies. Every AArch64 CPU runs it.
#define SPARROW_NEON_INSTALL InstallNeonKernels
#include "engine/kernels/arm/neon_variant.inc"
