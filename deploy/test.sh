#!/usr/bin/env bash
# The "test" command: installs what is missing, builds, and runs the whole test suite, each test
# once, in two builds:
#   deploy/test.sh               both halves, as CI runs them:
#   deploy/test.sh --release       the Release build in build/ (sparrowd, the tools, every test
#                                  but the unit tests: integration, golden, client, kernel tests)
#   deploy/test.sh --sanitize      the unit tests alone under ASan+UBSan in build-asan/
#   deploy/test.sh --no-sanitize every test, the unit tests too, in the Release build: quicker
#                                when sanitizers are not what you are after
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
case "$mode" in
  all | --release | --sanitize | --no-sanitize) ;;
  *) echo "usage: deploy/test.sh [--release | --sanitize | --no-sanitize]" >&2; exit 2 ;;
esac
deploy/setup-deps.sh --build
# lld links several times faster than ld.bfd (setup-deps installs it).
LINKER=()
if command -v ld.lld >/dev/null 2>&1; then LINKER=(-DSPARROW_LINKER=lld); fi

# The Release build and its tests. $1: ON to build and run the unit tests here too.
release_half() {
  local start=$SECONDS
  # What only the tests need (Chromium, clang, HAProxy) and the official Node clients (openai,
  # ollama, @grpc/grpc-js) the client tests drive sparrowd with: fetched while the build compiles
  # (the downloads wait on the network, the build on the CPU).
  mkdir -p build
  (deploy/setup-deps.sh --test && cd tests/clients && npm ci --no-audit --no-fund --loglevel=error) \
    >build/test-deps.log 2>&1 &
  local deps_pid=$!
  deploy/build.sh "${LINKER[@]}" -DSPARROW_UNIT_TESTS_IN_ALL="$1"
  if ! wait "$deps_pid"; then
    cat build/test-deps.log >&2
    echo "test: installing the tests' packages failed (above)" >&2
    return 1
  fi
  echo "test: set-up and Release build took $((SECONDS - start)) s" >&2
  (cd build && ctest --output-on-failure -j "$(nproc)")
  echo "test: the Release half took $((SECONDS - start)) s" >&2
}

# The unit tests' executables and what they link (the unit_tests target), with line tables only
# (-g1): ASan still reports file:line. The tests and the rest of the engine at -Og (the cheapest
# to compile that keeps ASan's reports readable), the server's glue at -O0 (20% less than -Og
# there: http_util.cc 69 s against 87 s), the engine's hot code at -O1.
sanitize_half() {
  local start=$SECONDS
  SPARROW_BUILD_DIR=build-asan SPARROW_BUILD_TARGETS=unit_tests deploy/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPARROW_SANITIZE=ON "${LINKER[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
    -DSPARROW_HOT_CODE_OPTIONS=-O1 -DSPARROW_GLUE_OPTIMIZATION=-O0
  echo "test: the sanitizer build took $((SECONDS - start)) s" >&2
  (cd build-asan &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j "$(nproc)" -L unit)
  echo "test: the sanitizer half took $((SECONDS - start)) s" >&2
}

case "$mode" in
  all)  # not `release_half OFF && ...`: errexit would not apply inside the first
    release_half OFF
    sanitize_half
    ;;
  --release) release_half OFF ;;
  --sanitize) sanitize_half ;;
  --no-sanitize) release_half ON ;;
esac
