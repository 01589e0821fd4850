#!/usr/bin/env bash
# Usage: deploy/arm64-sysroot.sh DIR
# Makes DIR an arm64 sysroot holding Debian bookworm's arm64 builds of the libraries the server
# links (the -dev packages deploy/setup-deps.sh installs for the host) and their runtime
# dependencies, for cross-building with g++-aarch64-linux-gnu (cmake/aarch64-linux-gnu-server.cmake)
# and running under qemu-aarch64 (-L DIR).
#
# Why not `dpkg --add-architecture arm64` and apt-get install of the :arm64 packages: on bookworm
# libyaml-cpp-dev is not Multi-Arch: same, so installing its arm64 build removes the host's, and the
# :arm64 libraries drag their amd64 twins to the same version. Here apt only resolves and downloads
# (its own lists and an empty package status under DIR/.apt) and dpkg -x unpacks: nothing installed
# on the host changes, and no root is needed.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
mkdir -p "$1"
ROOT="$(cd "$1" && pwd)"
if [ -f "$ROOT/.complete" ]; then
  exit 0
fi

DEV_PACKAGES=(
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev
  libgrpc++-dev libprotobuf-dev libboost-dev libyaml-cpp-dev liburing-dev libz3-dev libssl-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev
)
# The cross toolchain brings its own C library and C++ headers (/usr/aarch64-linux-gnu): a second
# copy of them on the include path would shadow the ones the compiler is built against. Their
# runtime libraries (libc6, libstdc++6, libgcc-s1) are kept: qemu and the tarball run with those.
SKIP='^(libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto|libstdc\+\+-12-dev|libgcc-12-dev|lib(asan|tsan|lsan|ubsan|hwasan|itm|gomp)[0-9]+|pkgconf.*|libpkgconf[0-9]+)$'

APT_DIR="$ROOT/.apt"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/debs"
: >"$APT_DIR/status"
APT_OPTS=(
  -o APT::Architecture=arm64 -o APT::Architectures=arm64
  -o Dir::State="$APT_DIR" -o Dir::State::Lists="$APT_DIR/lists"
  -o Dir::State::status="$APT_DIR/status" -o Dir::Cache="$APT_DIR/cache"
  -o Debug::NoLocking=1 -o APT::Sandbox::User=root -q
)
echo "arm64-sysroot: resolving ${DEV_PACKAGES[*]}"
apt-get "${APT_OPTS[@]}" update >/dev/null
# The simulated install on an empty status lists the whole dependency closure, versions included.
mapfile -t wanted < <(apt-get "${APT_OPTS[@]}" install -s --no-install-recommends "${DEV_PACKAGES[@]}" |
  awk '$1 == "Inst" { gsub(/[()]/, "", $3); print $2 "=" $3 }' | grep -Ev "${SKIP%$}=" || true)
if [ ${#wanted[@]} -eq 0 ]; then
  echo "arm64-sysroot: apt resolved no package for ${DEV_PACKAGES[*]}" >&2
  exit 1
fi
(cd "$APT_DIR/debs" && apt-get "${APT_OPTS[@]}" download "${wanted[@]}")
for deb in "$APT_DIR"/debs/*.deb; do
  dpkg-deb -x "$deb" "$ROOT"
done

# Debian's symlinks may be absolute (libz.so -> /lib/aarch64-linux-gnu/libz.so.1.2.13): point them
# inside the sysroot, or the linker would follow them to the host's x86-64 files.
find "$ROOT" -path "$APT_DIR" -prune -o -type l -lname '/*' -print | while read -r link; do
  ln -sfn "$ROOT$(readlink "$link")" "$link"
done
# gRPC's CMake package names its code generators under the prefix it was found in; the arm64
# package does not ship them and the build must run the host's anyway.
mkdir -p "$ROOT/usr/bin"
for plugin in grpc_cpp_plugin grpc_php_plugin grpc_python_plugin grpc_ruby_plugin; do
  if [ ! -x "/usr/bin/$plugin" ]; then
    echo "arm64-sysroot: /usr/bin/$plugin missing (protobuf-compiler-grpc, deploy/setup-deps.sh)" >&2
    exit 1
  fi
  ln -sfn "/usr/bin/$plugin" "$ROOT/usr/bin/$plugin"
done
echo "arm64-sysroot: ${#wanted[@]} packages unpacked into $ROOT"
touch "$ROOT/.complete"
