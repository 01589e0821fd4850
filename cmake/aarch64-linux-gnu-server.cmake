# Cross-compiling the whole server for 64-bit ARM Linux: the compiler and C library of
# cmake/aarch64-linux-gnu.cmake, plus Debian's arm64 builds of the other libraries unpacked into
# a sysroot by deploy/arm64-sysroot.sh (-DSPARROW_AARCH64_SYSROOT=DIR). protoc and
# grpc_cpp_plugin stay the host's. Used by deploy/test-aarch64.sh --server.
include(${CMAKE_CURRENT_LIST_DIR}/aarch64-linux-gnu.cmake)

if(NOT SPARROW_AARCH64_SYSROOT)
  message(FATAL_ERROR "SPARROW_AARCH64_SYSROOT: set it to a sysroot made by deploy/arm64-sysroot.sh")
endif()
# try_compile projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SPARROW_AARCH64_SYSROOT)

# Debian's multiarch layout: libraries and arch-specific headers under aarch64-linux-gnu/.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
list(APPEND CMAKE_FIND_ROOT_PATH ${SPARROW_AARCH64_SYSROOT})
foreach(lang C CXX)
  set(CMAKE_${lang}_STANDARD_INCLUDE_DIRECTORIES
    ${SPARROW_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu ${SPARROW_AARCH64_SYSROOT}/usr/include)
endforeach()
# The libraries' own dependencies (libgrpc++ needs libabsl_*, ...) are resolved from the sysroot.
set(CMAKE_EXE_LINKER_FLAGS_INIT
  "-Wl,-rpath-link,${SPARROW_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${SPARROW_AARCH64_SYSROOT}/lib/aarch64-linux-gnu")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")
# No RUNPATH into the sysroot, a directory of this machine: under qemu -L, and on a device, the
# loader finds the libraries where Debian puts them.
set(CMAKE_SKIP_BUILD_RPATH ON)

set(ENV{PKG_CONFIG_SYSROOT_DIR} ${SPARROW_AARCH64_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR}
  "${SPARROW_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${SPARROW_AARCH64_SYSROOT}/usr/share/pkgconfig")

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${SPARROW_AARCH64_SYSROOT})
