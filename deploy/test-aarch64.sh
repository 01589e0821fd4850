#!/usr/bin/env bash
# Cross-builds the compute kernels and their tests for 64-bit ARM Linux with Debian's
# g++-aarch64-linux-gnu (SPARROW_KERNELS_ONLY: no other dependency needed) into build-aarch64/,
# then runs the tests under qemu-aarch64:
#   - emulating a CPU with SDOT and SMMLA (qemu's "max"): the neon, dotprod and i8mm variants are
#     all tested against the scalar reference, and i8mm must be the one detected;
#   - emulating a Cortex-A76 (ARMv8.2 with SDOT, no SMMLA): dotprod must be the one detected;
#   - emulating a Cortex-A53 (ARMv8.0, no SDOT): neon must be the one detected.
# Installs the cross compiler and qemu-user when missing (needs root or sudo then).
# With --server, then also cross-builds the whole server and runs it under qemu-aarch64
# (deploy/test-aarch64-server.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER=0
for a in "$@"; do
  case "$a" in
    --server) SERVER=1 ;;
    *) echo "usage: $0 [--server]" >&2; exit 2 ;;
  esac
done

packages=(g++-aarch64-linux-gnu qemu-user libgtest-dev cmake ninja-build)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "test-aarch64: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=build-aarch64
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" -DSPARROW_KERNELS_ONLY=ON
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"

cd "$BUILD_DIR"
echo "test-aarch64: kernel tests on an emulated CPU with SDOT and SMMLA (qemu max)"
QEMU_CPU=max SPARROW_EXPECT_BEST_ISA=i8mm ctest --output-on-failure -j "$(nproc)"
echo "test-aarch64: ISA detection on an emulated Cortex-A76 (SDOT, no SMMLA)"
QEMU_CPU=cortex-a76 SPARROW_EXPECT_BEST_ISA=dotprod \
  ctest --output-on-failure -R 'CpuFeaturesTest|VecDotTest|ActQuantTest'
echo "test-aarch64: ISA detection on an emulated Cortex-A53 (no SDOT)"
QEMU_CPU=cortex-a53 SPARROW_EXPECT_BEST_ISA=neon \
  ctest --output-on-failure -R 'CpuFeaturesTest|VecDotTest|ActQuantTest'

if [ "$SERVER" = 1 ]; then
  exec ../deploy/test-aarch64-server.sh
fi
