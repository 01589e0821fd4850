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
# Configures and builds the target, unless run_all_fuzz.sh has (SPARROW_FUZZ_BUILT=1).
build="$("$root/tests/fuzz/build_fuzz_target.sh" shard_wire_fuzz)"

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
