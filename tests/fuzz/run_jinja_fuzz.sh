#!/usr/bin/env bash
# Fuzzes the chat-template interpreter (engine/jinja) for <seconds> (default 60) with
# jinja_fuzz (clang, libFuzzer, ASan/UBSan; built by build_fuzz_target.sh), from the real
# templates in tests/data/chat_templates and the runaway ones in tests/fuzz/jinja_seeds. Exits
# non-zero when the fuzzer finds a crash, a leak, a hang, memory over its limits, or an error
# without a line (jinja_fuzz.cc); the input is left in build-fuzz/fuzz-jinja/artifacts/ and
# belongs, once fixed, in tests/unit/jinja/jinja_limits_test.cc or jinja_template_test.cc.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_BUILT (set: already built).
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$("$here/build_fuzz_target.sh" jinja_fuzz)"
work="$build/fuzz-jinja"
mkdir -p "$work/corpus" "$work/artifacts"  # the corpus grows across runs
echo "run_jinja_fuzz: fuzzing for ${seconds}s"
# jinja_fuzz renders with small RenderLimits: a render that takes 20 s is a hang, one allocation
# over 256 MiB or 1 GiB of RSS memory the limits let through.
"$build/bin/jinja_fuzz" "$work/corpus" "$here/../data/chat_templates" "$here/jinja_seeds" \
  -dict="$here/jinja.dict" -max_len=16384 -max_total_time="$seconds" -timeout=20 \
  -rss_limit_mb=1024 -malloc_limit_mb=256 -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1
