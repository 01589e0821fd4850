#!/usr/bin/env bash
# Installs the Debian packages Sparrow builds and tests with. Idempotent and non-interactive:
# does nothing when everything is present. Needs root (or sudo) only when something is missing.
#   deploy/setup-deps.sh           all of them
#   deploy/setup-deps.sh --build   what configuring and building needs
#   deploy/setup-deps.sh --test    what only the tests run (deploy/test.sh installs these while
#                                  the build compiles: Chromium alone is minutes of downloading)
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git lld   # lld: deploy/test.sh links with it
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev
  libgtest-dev libgmock-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler   # gRPC frontend
  libboost-dev libyaml-cpp-dev                                             # HTTP (Beast), config
  liburing-dev                                                             # flash reads (io_uring)
  libz3-dev                                                                # the planner (Z3 optimizer)
  libssl-dev openssl                                                       # TLS, certificates
  libpng-dev libjpeg62-turbo-dev libwebp-dev                               # images in chat (engine/vision)
  python3                    # the fleet test, found when the build is configured
)
TEST_PACKAGES=(
  clang libclang-rt-14-dev   # libFuzzer and sanitizer runtimes for the fuzz target
  chromium                   # the web dashboard's test drives it headless (playwright-core)
  iproute2                   # ip and tc: the shard test's devices in network namespaces
  haproxy                    # deploy/fleet: the balancer of its test (tests/fleet)
)
case "${1:-}" in
  --build) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  --test) PACKAGES=("${TEST_PACKAGES[@]}") ;;
  "") PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: deploy/setup-deps.sh [--build | --test]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js with npm drives the official OpenAI and gRPC client tests, found when the build is
# configured. Keep a Node that is already installed (it may come with its own npm); otherwise
# take Debian's.
if [ "${1:-}" != "--test" ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
