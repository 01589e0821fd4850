#!/usr/bin/env bash
# Fuzzes the shard wire as a worker decodes it (server/shard/shard_wire.cc, engine/shard/'s range
# checks and mirrored KV pool) for <seconds> (default 60): configures build-fuzz with clang,
# libFuzzer and ASan/UBSan, builds shard_wire_fuzz and fuzzes it from valid sessions it writes
# itself (an assignment, then steps in each encoding). Exits non-zero when the fuzzer finds a
# crash (an out-of-bounds index, an overflow, a refusal that is not InvalidArgument); the input is
# left in build-fuzz/fuzz-shard/artifacts/.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_BUILT (set: already built).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${SPARROW_FUZZ_BUILD:-$root/build-fuzz}"

# run_all_fuzz.sh has configured and built every fuzz target already (SPARROW_FUZZ_BUILT=1).
if [[ -z "${SPARROW_FUZZ_BUILT:-}" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSPARROW_FUZZ=ON >/dev/null
  cmake --build "$build" --target shard_wire_fuzz
fi

work="$build/fuzz-shard"
corpus="$work/corpus"  # grows across runs
seeds="$work/seeds"
artifacts="$work/artifacts"
mkdir -p "$corpus" "$seeds" "$artifacts"
SHARD_FUZZ_SEEDS="$seeds" "$build/bin/shard_wire_fuzz"
echo "run_shard_fuzz: fuzzing for ${seconds}s"
"$build/bin/shard_wire_fuzz" "$corpus" "$seeds" \
  -max_len=8192 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1
