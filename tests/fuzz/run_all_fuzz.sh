#!/usr/bin/env bash
# Runs every fuzzer script beside this one (tests/fuzz/run_*_fuzz.sh) for <seconds> each
# (default 60), as CI does. Configures build-fuzz once and builds every fuzz target in one ninja
# call (the `fuzzers` target of tests/fuzz/CMakeLists.txt), then runs the scripts $(nproc) at a
# time: libFuzzer is one process on one core, and -max_total_time counts wall seconds, so each
# fuzzer still gets its full <seconds> of one core. Each script's output is printed when it ends.
# Exits non-zero when any fuzzer fails (its input is left in that script's artifacts folder).
#
# A script that honours SPARROW_FUZZ_BUILT=1 (skips its own configure and build, as
# run_gguf_fuzz.sh does) runs beside the others; one that does not is run alone afterwards, since
# two cmake runs in one build folder at once would race.
# Environment: SPARROW_FUZZ_BUILD (build folder), SPARROW_FUZZ_JOBS (scripts at a time).
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export SPARROW_FUZZ_BUILD="${SPARROW_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${SPARROW_FUZZ_JOBS:-$(nproc)}"

"$here/build_fuzz_target.sh" fuzzers >/dev/null

beside=() alone=()
for script in "$here"/run_*_fuzz.sh; do
  [[ "$script" == "${BASH_SOURCE[0]}" || "$(basename "$script")" == run_all_fuzz.sh ]] && continue
  if grep -q SPARROW_FUZZ_BUILT "$script"; then beside+=("$script"); else alone+=("$script"); fi
done
echo "run_all_fuzz: ${#beside[@]} fuzzers ${jobs} at a time, then ${#alone[@]} alone, ${seconds}s each"

logs="$SPARROW_FUZZ_BUILD/fuzz-logs"
mkdir -p "$logs"
failed=()
declare -A name_of=()
# Waits for one running script, prints its log and records a failure.
reap() {
  local pid status=0
  wait -n -p pid || status=$?
  local name="${name_of[$pid]}"
  unset "name_of[$pid]"
  echo "===== $name (exit $status)"
  cat "$logs/$name.log"
  if [[ "$status" -ne 0 ]]; then failed+=("$name"); fi
}

export SPARROW_FUZZ_BUILT=1
for script in "${beside[@]}"; do
  while [[ "${#name_of[@]}" -ge "$jobs" ]]; do reap; done
  name="$(basename "$script" .sh)"
  "$script" "$seconds" >"$logs/$name.log" 2>&1 &
  name_of[$!]="$name"
done
while [[ "${#name_of[@]}" -gt 0 ]]; do reap; done

unset SPARROW_FUZZ_BUILT
for script in "${alone[@]}"; do
  name="$(basename "$script" .sh)"
  echo "===== $name (alone: it does not honour SPARROW_FUZZ_BUILT)"
  "$script" "$seconds" || failed+=("$name")
done

if [[ "${#failed[@]}" -gt 0 ]]; then
  echo "run_all_fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "run_all_fuzz: all fuzzers clean"
