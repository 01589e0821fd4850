#!/usr/bin/env bash
# Configures and builds Sparrow (Release) into build/ (or $SPARROW_BUILD_DIR): everything, or the
# targets $SPARROW_BUILD_TARGETS names. Extra arguments are passed to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${SPARROW_BUILD_DIR:-build}"
GENERATOR=()
if command -v ninja >/dev/null 2>&1; then GENERATOR=(-G Ninja); fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
TARGETS=()
for t in ${SPARROW_BUILD_TARGETS:-}; do TARGETS+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${TARGETS[@]}"
