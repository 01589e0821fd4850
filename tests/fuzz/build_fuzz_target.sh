#!/usr/bin/env bash
# Configures build-fuzz (clang, libFuzzer, ASan/UBSan; SPARROW_FUZZ_BUILD overrides the folder)
# and builds the fuzz target <target>; the build's output goes to stderr and the folder's path to
# stdout, for the run_*_fuzz.sh scripts: build="$(build_fuzz_target.sh jinja_fuzz)". With
# SPARROW_FUZZ_BUILT set it only prints the folder.
set -euo pipefail

target="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${SPARROW_FUZZ_BUILD:-$root/build-fuzz}"
# run_all_fuzz.sh has configured and built every fuzz target already (SPARROW_FUZZ_BUILT=1).
if [[ -n "${SPARROW_FUZZ_BUILT:-}" ]]; then
  echo "$build"
  exit 0
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSPARROW_FUZZ=ON >&2
cmake --build "$build" --target "$target" >&2
echo "$build"
