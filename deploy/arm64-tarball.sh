#!/usr/bin/env bash
# Usage: deploy/arm64-tarball.sh BUILD_DIR SYSROOT
# Packs the arm64 sparrowd, sparrow and sparrowctl of BUILD_DIR (cross-built by
# deploy/test-aarch64.sh --server) with every shared library they load, the dynamic loader
# included, taken from SYSROOT (deploy/arm64-sysroot.sh), into
# BUILD_DIR/sparrow-VERSION-linux-arm64.tar.gz. Unpacked anywhere on a 64-bit ARM Linux with
# glibc, bin/sparrowd runs with no package installed: bin/ holds launchers that start the real
# programs (libexec/) through the bundled loader with only the bundled libraries (lib/).
# Prints the tarball's path.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SYSROOT" >&2
  exit 2
fi
BUILD="$(cd "$1" && pwd)"
SYSROOT="$(cd "$2" && pwd)"
PROGRAMS=(sparrowd sparrow sparrowctl)
VERSION="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")"
NAME="sparrow-${VERSION:-unknown}-linux-arm64"
STAGE="$BUILD/$NAME"
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/libexec" "$STAGE/lib"

LOADER=ld-linux-aarch64.so.1
for p in "${PROGRAMS[@]}"; do
  if [ ! -x "$BUILD/bin/$p" ]; then
    echo "arm64-tarball: $BUILD/bin/$p missing (build it first)" >&2
    exit 1
  fi
  aarch64-linux-gnu-strip -o "$STAGE/libexec/$p" "$BUILD/bin/$p"
  # The loader itself lists what it would load, as resolved in the sysroot (qemu's -L).
  qemu-aarch64 -L "$SYSROOT" "$SYSROOT/lib/$LOADER" --list "$BUILD/bin/$p" |
    awk '$2 == "=>" { print $3 }' | while read -r lib; do
    case "$lib" in
      "$SYSROOT"/*) ;;
      *) lib="$SYSROOT$lib" ;;  # a path on the device: qemu found it in the sysroot
    esac
    if [ ! -e "$lib" ]; then
      echo "arm64-tarball: $p needs $lib, not in $SYSROOT" >&2
      exit 1
    fi
    cp -L "$lib" "$STAGE/lib/"
  done
done
cp -L "$SYSROOT/lib/$LOADER" "$STAGE/lib/$LOADER"

# One launcher; each program's name in bin/ is a link to it. SPARROW_EMULATOR (e.g.
# qemu-aarch64) runs the loader on another architecture: how deploy/test-aarch64.sh tests it.
cat >"$STAGE/bin/.launch" <<EOF
#!/bin/sh
# Runs libexec/\$(basename "\$0") with the loader and libraries of lib/ only ($NAME).
here="\$(dirname "\$(readlink -f "\$0")")/.."
exec \${SPARROW_EMULATOR:-} "\$here/lib/$LOADER" --library-path "\$here/lib" --argv0 "\$0" \\
  "\$here/libexec/\$(basename "\$0")" "\$@"
EOF
chmod +x "$STAGE/bin/.launch"
for p in "${PROGRAMS[@]}"; do
  ln -s .launch "$STAGE/bin/$p"
done

tar -C "$BUILD" -czf "$BUILD/$NAME.tar.gz" "$NAME"
echo "$BUILD/$NAME.tar.gz"
