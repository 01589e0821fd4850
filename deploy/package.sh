#!/usr/bin/env bash
# Builds the Debian packages sparrowd, sparrow and sparrowctl with CPack (cmake/packaging.cmake).
#   deploy/package.sh                      Release build in build/, packages in build/packages/
#   deploy/package.sh --build-dir DIR      another build (a cross build's packages are its
#                                          target's architecture: arm64 for aarch64)
#   deploy/package.sh --output DIR         the .deb files go to DIR instead of BUILD/packages
#   deploy/package.sh --no-build           package what BUILD already holds (the package test)
#   deploy/package.sh --build-dir build-aarch64-server --no-build --sysroot DIR
#                                          the aarch64 cross build of deploy/test-aarch64.sh
#                                          --server: its Depends are read from the arm64 .debs
#                                          the sysroot was made of (deploy/arm64-sysroot.sh)
# Prints the path of each package made.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build
OUTPUT=""
BUILD=1
SYSROOT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --output) OUTPUT="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --sysroot) SYSROOT="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
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

# A cross build: dpkg-shlibdeps would look the binaries' libraries up among the target
# architecture's installed packages, which a machine without multiarch does not have. With
# --sysroot, each component depends instead on the packages whose .deb holds a library its
# program names (NEEDED), at least the version the sysroot was made of.
ARCH="$(sed -n 's/^set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "\(.*\)")$/\1/p' "$BUILD_DIR/CPackConfig.cmake")"
CPACK_ARGS=()
if [ -n "$ARCH" ] && [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  export DEB_HOST_ARCH="$ARCH"
  if [ -n "$SYSROOT" ]; then
    DEBS="$SYSROOT/.apt/debs"
    if ! ls "$DEBS"/*.deb >/dev/null 2>&1; then
      echo "package.sh: no .deb files in $DEBS (make the sysroot with deploy/arm64-sysroot.sh)" >&2
      exit 1
    fi
    # soname -> "package (>= version)", from every .deb's file list.
    declare -A PROVIDER
    for deb in "$DEBS"/*.deb; do
      pkg="$(dpkg-deb -f "$deb" Package)"
      ver="$(dpkg-deb -f "$deb" Version)"
      ver="${ver%-*}"  # the upstream version (epoch kept): any Debian revision of it will do
      while read -r lib; do
        PROVIDER["$lib"]="$pkg (>= $ver)"
      done < <(dpkg-deb -c "$deb" | awk '{print $6}' | sed -n 's|.*/\(lib[^/]*\.so\.[0-9.]*\)$|\1|p')
    done
    depends_of() {  # depends_of PROGRAM [EXTRA]...
      local needed deps=("${@:2}")
      while read -r needed; do
        if [ -z "${PROVIDER[$needed]:-}" ]; then
          echo "package.sh: no .deb in $DEBS holds $needed, which $1 needs" >&2
          exit 1
        fi
        deps+=("${PROVIDER[$needed]}")
      done < <(readelf -d "$BUILD_DIR/bin/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
      printf '%s\n' "${deps[@]}" | sort -u | paste -sd, | sed 's/,/, /g'
    }
    sparrowd_deps="$(depends_of sparrowd adduser)"
    sparrow_deps="$(depends_of sparrow)"
    CPACK_ARGS+=(-D CPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF
                 -D "CPACK_DEBIAN_SPARROWD_PACKAGE_DEPENDS=$sparrowd_deps"
                 -D "CPACK_DEBIAN_SPARROW_PACKAGE_DEPENDS=$sparrow_deps")
    if [ -x "$BUILD_DIR/bin/sparrowctl" ]; then
      sparrowctl_deps="$(depends_of sparrowctl)"
      CPACK_ARGS+=(-D "CPACK_DEBIAN_SPARROWCTL_PACKAGE_DEPENDS=$sparrowctl_deps")
    fi
  fi
fi

mkdir -p "$OUTPUT"
OUTPUT="$(cd "$OUTPUT" && pwd)"
cpack --config "$BUILD_DIR/CPackConfig.cmake" -B "$OUTPUT" "${CPACK_ARGS[@]}" >"$OUTPUT/cpack.log" 2>&1 || {
  cat "$OUTPUT/cpack.log" >&2
  exit 1
}
rm -rf "$OUTPUT/_CPack_Packages"
ls "$OUTPUT"/*.deb
