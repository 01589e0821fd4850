#!/usr/bin/env bash
# Builds the Debian packages sparrowd, sparrow and sparrowctl with CPack (cmake/packaging.cmake).
#   deploy/package.sh                      Release build in build/, packages in build/packages/
#   deploy/package.sh --build-dir DIR      another build (a cross build's packages are its
#                                          target's architecture: arm64 for aarch64)
#   deploy/package.sh --output DIR         the .deb files go to DIR instead of BUILD/packages
#   deploy/package.sh --no-build           package what BUILD already holds (the package test)
# Prints the path of each package made.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build
OUTPUT=""
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --output) OUTPUT="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
OUTPUT="${OUTPUT:-$BUILD_DIR/packages}"

if [ "$BUILD" = 1 ]; then
  deploy/setup-deps.sh
  SPARROW_BUILD_DIR="$BUILD_DIR" SPARROW_BUILD_TARGETS="sparrowd sparrow sparrowctl" deploy/build.sh
fi
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "package.sh: '$tool' is missing (apt-get install cmake dpkg-dev)" >&2
    exit 1
  fi
done
if [ ! -f "$BUILD_DIR/CPackConfig.cmake" ]; then
  echo "package.sh: $BUILD_DIR is not a configured build (no CPackConfig.cmake)" >&2
  exit 1
fi

# A cross build: dpkg-shlibdeps reads the binaries with the target's objdump and looks their
# libraries up among the target architecture's installed packages (multiarch).
ARCH="$(sed -n 's/^set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "\(.*\)")$/\1/p' "$BUILD_DIR/CPackConfig.cmake")"
if [ -n "$ARCH" ] && [ "$ARCH" != "$(dpkg --print-architecture)" ]; then export DEB_HOST_ARCH="$ARCH"; fi

mkdir -p "$OUTPUT"
OUTPUT="$(cd "$OUTPUT" && pwd)"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$OUTPUT" >"$OUTPUT/cpack.log" 2>&1 || {
  cat "$OUTPUT/cpack.log" >&2
  exit 1
}
rm -rf "$OUTPUT/_CPack_Packages"
ls "$OUTPUT"/*.deb
