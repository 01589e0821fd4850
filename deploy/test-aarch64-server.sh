#!/usr/bin/env bash
# The whole server for 64-bit ARM Linux (deploy/test-aarch64.sh --server runs it after the
# kernels): cross-builds sparrowd, sparrow and sparrowctl with g++-aarch64-linux-gnu against
# Debian's arm64 libraries (a sysroot made by deploy/arm64-sysroot.sh) into build-aarch64-server/,
# then under qemu-aarch64:
#   - `sparrow generate`, greedy, on the tiny real models, on a CPU with SMMLA (qemu max) and on a
#     Cortex-A53 (plain NEON): the tokens llama.cpp chose (../shared/testdata/golden), and the x86
#     build's where there is one (build/, or $SPARROW_HOST_BUILD);
#   - the Node OpenAI and gRPC client tests (tests/clients) against the arm64 sparrowd: a greedy
#     completion over HTTP and a greedy Generate over gRPC give llama.cpp's text, and more;
#   - the self-contained tarball (deploy/arm64-tarball.sh), unpacked in a temporary directory and
#     run without the sysroot (no -L, no QEMU_LD_PREFIX): every library its programs load is its
#     own, `sparrow generate` gives the same tokens and the OpenAI client test passes;
#   - the arm64 Debian packages (deploy/package.sh --sysroot): each depends on libc6 and only on
#     packages of Debian arm64, and the packaged `sparrow` gives the same tokens.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SHARED="$(cd "${SPARROW_SHARED_DIR:-../shared}" && pwd)"
BUILD="$ROOT/build-aarch64-server"
SYSROOT="$BUILD/sysroot"
HOST_SPARROW="${SPARROW_HOST_BUILD:-$ROOT/build}/bin/sparrow"
unset QEMU_LD_PREFIX

deploy/setup-deps.sh  # the host's protoc, grpc_cpp_plugin, Node
if [ ! -d tests/clients/node_modules ]; then
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
fi

step() { echo "test-aarch64-server: $* ($(date +%T))"; }

step "arm64 sysroot"
deploy/arm64-sysroot.sh "$SYSROOT"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARROW_BUILD_TESTS=OFF \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu-server.cmake" \
    -DSPARROW_AARCH64_SYSROOT="$SYSROOT"
fi
step "cross-building sparrowd, sparrow, sparrowctl"
cmake --build "$BUILD" -j "$(nproc)" --target sparrowd sparrow sparrowctl

# Prints the generated token ids of `sparrow generate --json` (stdin) or of a golden file's
# first prompt ($1), one JSON array.
tokens() {
  if [ $# -eq 1 ]; then
    node -e 'console.log(JSON.stringify(require(process.argv[1]).prompts[0].generated_tokens))' "$1"
  else
    node -e 'console.log(JSON.stringify(JSON.parse(require("fs").readFileSync(0)).tokens))'
  fi
}
# `sparrow generate` greedy on the golden files' first prompt, as many tokens as llama.cpp made.
generate() {  # generate SPARROW_COMMAND... -- MODEL
  local model="${*: -1}"
  "${@:1:$#-2}" generate -m "$model" -p "Once upon a time" -n 48 --temp 0 --json 2>/dev/null
}
check_generate() {  # check_generate LABEL SPARROW_COMMAND...
  local label="$1" failed=0
  shift
  for stem in stories260K stories260K-q8_0 stories260K-q4_0 aidreams260K-q4_0; do
    local model="$SHARED/models/$stem.gguf" want got
    want="$(tokens "$SHARED/testdata/golden/$stem.json")"
    got="$(generate "$@" -- "$model" | tokens)"
    if [ "$got" != "$want" ]; then
      echo "FAIL $label $stem: tokens $got, llama.cpp's $want"
      failed=1
    elif [ -x "$HOST_SPARROW" ] && [ "$(generate "$HOST_SPARROW" -- "$model" | tokens)" != "$got" ]; then
      echo "FAIL $label $stem: the x86 $HOST_SPARROW generates other tokens"
      failed=1
    else
      echo "ok   $label $stem: llama.cpp's 48 greedy tokens$([ -x "$HOST_SPARROW" ] && echo ", as x86's")"
    fi
  done
  return $failed
}
# The Node client tests against an arm64 sparrowd started by SPARROWD (a launcher script).
client_tests() {  # client_tests SPARROWD TEST...
  local sparrowd="$1"
  shift
  for t in "$@"; do
    (cd tests/clients && node "$t" --sparrowd "$sparrowd" --model "$SHARED/models/stories260K.gguf" \
      --proto "$ROOT/api/proto/sparrow/v1/sparrow.proto" \
      --golden "$SHARED/testdata/golden/stories260K.json")
  done
}

step "sparrow generate under qemu-aarch64 with the sysroot"
QEMU_CPU=max check_generate "qemu max" qemu-aarch64 -L "$SYSROOT" "$BUILD/bin/sparrow"
QEMU_CPU=cortex-a53 check_generate "qemu cortex-a53" qemu-aarch64 -L "$SYSROOT" "$BUILD/bin/sparrow"

step "Node clients against sparrowd under qemu-aarch64"
mkdir -p "$BUILD/qemu"
printf '#!/bin/sh\nexec qemu-aarch64 -L "%s" "%s" "$@"\n' "$SYSROOT" "$BUILD/bin/sparrowd" \
  >"$BUILD/qemu/sparrowd"
chmod +x "$BUILD/qemu/sparrowd"
client_tests "$BUILD/qemu/sparrowd" openai_client_test.mjs grpc_client_test.mjs

step "the self-contained tarball, without the sysroot"
TARBALL="$(deploy/arm64-tarball.sh "$BUILD" "$SYSROOT")"
UNPACKED="$(mktemp -d)"
trap 'rm -rf "$UNPACKED"' EXIT
tar -C "$UNPACKED" -xzf "$TARBALL"
DIR="$(echo "$UNPACKED"/sparrow-*-linux-arm64)"
for p in sparrowd sparrow sparrowctl; do
  stray="$(qemu-aarch64 "$DIR/lib/ld-linux-aarch64.so.1" --library-path "$DIR/lib" --list \
    "$DIR/libexec/$p" | awk '$2 == "=>" && index($3, "'"$DIR"'/lib/") != 1')"
  if [ -n "$stray" ]; then
    echo "FAIL tarball: $p loads libraries from outside it: $stray"
    exit 1
  fi
done
echo "ok   tarball: $(du -h "$TARBALL" | cut -f1) $TARBALL; its programs load only its lib/"
export SPARROW_EMULATOR=qemu-aarch64
"$DIR/bin/sparrowctl" --version
check_generate "tarball" "$DIR/bin/sparrow"
client_tests "$DIR/bin/sparrowd" openai_client_test.mjs

step "arm64 Debian packages of the cross build"
PACKAGES="$BUILD/packages"
rm -rf "$PACKAGES"
deploy/package.sh --build-dir "$BUILD" --no-build --sysroot "$SYSROOT" --output "$PACKAGES" >/dev/null
EXTRACTED="$(mktemp -d)"
trap 'rm -rf "$UNPACKED" "$EXTRACTED"' EXIT
for p in sparrowd sparrow sparrowctl; do
  deb="$(echo "$PACKAGES/${p}_"*_arm64.deb)"
  depends="$(dpkg-deb -f "$deb" Depends)"
  # Every dependency is a package the sysroot was made of (so Debian arm64 has it).
  for dep in $(echo "$depends" | tr ',' '\n' | awk '{print $1}'); do
    if [ "$dep" != adduser ] && ! ls "$SYSROOT/.apt/debs/${dep}_"*.deb >/dev/null 2>&1; then
      echo "FAIL package $p: depends on '$dep', which no arm64 .deb of the sysroot is"
      exit 1
    fi
  done
  case "$depends" in *libc6*) ;; *) echo "FAIL package $p: no libc6 in Depends: $depends"; exit 1 ;; esac
  dpkg-deb -x "$deb" "$EXTRACTED"
  echo "ok   package $(basename "$deb"): Depends $(echo "$depends" | tr ',' '\n' | wc -l) packages"
done
QEMU_CPU=max check_generate "packaged" qemu-aarch64 -L "$SYSROOT" "$EXTRACTED/usr/bin/sparrow"
step "done"
