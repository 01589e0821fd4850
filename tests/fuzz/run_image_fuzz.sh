#!/usr/bin/env bash
# Fuzzes the image decoders (engine/vision: libpng, libjpeg-turbo, libwebp behind DecodeImage)
# for <seconds> (default 60) with image_decode_fuzz (clang, libFuzzer, ASan/UBSan; built by
# build_fuzz_target.sh), from small files the real encoders write (write_image_seeds). Exits
# non-zero when the fuzzer finds a crash, a leak, a hang, memory past its limits, or a decoded
# image that breaks DecodeImage's promises (image_decode_fuzz.cc); the input is left in
# build-fuzz/fuzz-image/artifacts/ and belongs, once fixed, in
# tests/unit/vision/image_decode_test.cc.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_BUILT (set: already built).
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$("$here/build_fuzz_target.sh" image_decode_fuzz)"
[[ -n "${SPARROW_FUZZ_BUILT:-}" ]] || cmake --build "$build" --target write_image_seeds >&2
work="$build/fuzz-image"
rm -rf "$work/seeds"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"  # the corpus grows across runs
"$build/bin/write_image_seeds" "$work/seeds"
echo "run_image_fuzz: $(ls "$work/seeds" | wc -l) seeds, fuzzing for ${seconds}s"
# DecodeImage runs with limits of a megapixel (image_decode_fuzz.cc): one allocation over
# 128 MiB, or 1 GiB of RSS, is memory the limits let through.
"$build/bin/image_decode_fuzz" "$work/corpus" "$work/seeds" \
  -dict="$here/image.dict" -max_len=65536 -max_total_time="$seconds" -timeout=20 \
  -rss_limit_mb=1024 -malloc_limit_mb=128 -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1
