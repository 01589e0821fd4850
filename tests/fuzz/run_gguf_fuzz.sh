#!/usr/bin/env bash
# Fuzzes the GGUF reader for <seconds> (default 60): configures build-fuzz with clang, libFuzzer
# and ASan/UBSan, builds gguf_fuzz, seeds a corpus from small generated files and the shared
# models, then fuzzes. Model files over SEED_LEN are cut to SEED_LEN: the cut files no longer
# parse, but their headers still drive the metadata parser, and small inputs keep the fuzzer
# fast (whole megabyte-sized models run at a few dozen inputs a second). Exits non-zero when the fuzzer finds a crash; the input is left in
# build-fuzz/fuzz/artifacts/.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_BUILT (set: already built),
# SPARROW_SHARED_DIR, FUZZ_MAX_LEN (largest input, bytes), FUZZ_SEED_LEN (bytes kept of each
# model file).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Configures and builds the target, unless run_all_fuzz.sh has (SPARROW_FUZZ_BUILT=1).
build="$("$root/tests/fuzz/build_fuzz_target.sh" gguf_fuzz)"
shared="${SPARROW_SHARED_DIR:-$root/../shared}"
max_len="${FUZZ_MAX_LEN:-1048576}"
seed_len="${FUZZ_SEED_LEN:-65536}"

work="$build/fuzz"
seeds="$work/seeds"
corpus="$work/corpus"      # grows across runs
artifacts="$work/artifacts"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
python3 "$root/tests/fuzz/make_seeds.py" "$seeds"
if [[ -d "$shared/models" ]]; then
  # PowerInfer's files (magic PWRI) drive the reader's other entry; the KJV ones are trained.
  while IFS= read -r -d '' f; do
    name="$(echo "${f#"$shared/"}" | tr '/' '_')"
    head -c "$seed_len" "$f" >"$seeds/$name"
  done < <(find "$shared/models" "$shared/pwri/models" "$shared/kjv/models" -name '*.gguf' \
             -print0 2>/dev/null)
  # A file in the neuron-bundle layout (sparrow convert), when the release build is there.
  if [[ -x "$root/build/bin/sparrow" ]]; then
    "$root/build/bin/sparrow" convert -m "$shared/pwri/models/pwri-bamboo-q4_0.gguf" \
      -o "$work/bundles.gguf" >/dev/null && head -c "$seed_len" "$work/bundles.gguf" >"$seeds/bundles.gguf"
  fi
else
  echo "run_gguf_fuzz: no $shared/models; using generated seeds only" >&2
fi
echo "run_gguf_fuzz: $(ls "$seeds" | wc -l) seeds, fuzzing for ${seconds}s"

# libFuzzer exits non-zero on a crash, a leak, a timeout or an out-of-memory input.
"$build/bin/gguf_fuzz" "$corpus" "$seeds" \
  -dict="$root/tests/fuzz/gguf.dict" \
  -max_len="$max_len" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/" -print_final_stats=1
