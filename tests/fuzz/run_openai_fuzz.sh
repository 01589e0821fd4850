#!/usr/bin/env bash
# Fuzzes the OpenAI request parser (api/openai) for <seconds> (default 60): configures
# build-fuzz with clang, libFuzzer and ASan/UBSan, builds openai_request_fuzz and fuzzes it from
# the request bodies in tests/fuzz/openai_seeds and the large ones make_openai_seeds.py writes
# (deep and wide JSON), with inputs up to 1 MiB, the body limit of the HTTP frontend. Exits
# non-zero when the fuzzer finds a crash (an exception escaping the parser counts); the input is
# left in build-fuzz/fuzz-openai/artifacts/.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_BUILT (set: already built).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Configures and builds the target, unless run_all_fuzz.sh has (SPARROW_FUZZ_BUILT=1).
build="$("$root/tests/fuzz/build_fuzz_target.sh" openai_request_fuzz)"

work="$build/fuzz-openai"
corpus="$work/corpus"  # grows across runs
artifacts="$work/artifacts"
large_seeds="$work/large_seeds"
mkdir -p "$corpus" "$artifacts"
python3 "$root/tests/fuzz/make_openai_seeds.py" "$large_seeds"
echo "run_openai_fuzz: fuzzing for ${seconds}s"
"$build/bin/openai_request_fuzz" "$corpus" "$root/tests/fuzz/openai_seeds" "$large_seeds" \
  -dict="$root/tests/fuzz/openai.dict" \
  -max_len=1048576 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts/" -print_final_stats=1
