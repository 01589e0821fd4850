// The ARMv8.6 int8 matrix multiply variant (compiled with -march=armv8.2-a+dotprod+i8mm): the
// dotprod kernels, with SMMLA for the prompt batches of the 32-element block types. Only reached
// when the kernel's HWCAP2 says the CPU has it.
#define SPARROW_NEON_INSTALL InstallI8mmKernels
#include "engine/kernels/arm/neon_variant.inc"
