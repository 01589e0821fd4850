#!/usr/bin/env bash
# The "test" command: installs what is missing, builds, and runs the whole test suite.
#   deploy/test.sh            Release build in build/, all tests
#   deploy/test.sh --sanitize ASan+UBSan build of the unit tests in build-asan/, and their run
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup-deps.sh
# lld links several times faster than ld.bfd (setup-deps installs it).
LINKER=()
if command -v ld.lld >/dev/null 2>&1; then LINKER=(-DSPARROW_LINKER=lld); fi
if [ "${1:-}" = "--sanitize" ]; then
  # Only the unit tests' executables and what they link (the unit_tests target), with line tables
  # only (-g1): ASan still reports file:line. The tests and the rest of the engine at -Og (the
  # cheapest to compile that keeps ASan's reports readable), the server's glue at -O0 (20% less
  # than -Og there: http_util.cc 69 s against 87 s), the engine's hot code at -O1.
  export SPARROW_BUILD_DIR=build-asan SPARROW_BUILD_TARGETS=unit_tests
  deploy/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPARROW_SANITIZE=ON "${LINKER[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
    -DSPARROW_HOT_CODE_OPTIONS=-O1 -DSPARROW_GLUE_OPTIMIZATION=-O0
  echo "test: the sanitizer build took $SECONDS s" >&2
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd build-asan && ctest --output-on-failure -j "$(nproc)" -L unit
else
  # The official Node clients (openai, ollama, @grpc/grpc-js) the client tests drive sparrowd with:
  # fetched while the build compiles (npm waits on the network, the build on the CPU).
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error) &
  npm_pid=$!
  deploy/build.sh "${LINKER[@]}"
  wait "$npm_pid"
  echo "test: set-up and build took $SECONDS s" >&2
  cd build && ctest --output-on-failure -j "$(nproc)"
fi
