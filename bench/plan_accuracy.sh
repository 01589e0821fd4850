#!/usr/bin/env bash
# The planner's predicted decode speed against the measured one: for each budget, `sparrow plan`
# chooses threads and neuron-cache size, `sparrow bench` runs the converted model with them, and
# a line gives budget, threads, cache MiB, predicted tok/s, measured median tok/s, hit rate and
# the measured samples.
#
#   bench/plan_accuracy.sh CONVERTED=model.sparrow.gguf HW=hw.yaml BUDGETS="500 600 700"
#       [PLAN_FLAGS="--active-share 0.25 --threads-max 1"] [N=16] [R=3] [SPARROW=build/bin/sparrow]
#       [TEXT=eval.txt]   (decode this text's tokens, not random ids: for a file converted with
#                          --calibrate, whose miss curve was measured on text)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONVERTED="${CONVERTED:-}" HW="${HW:-}" BUDGETS="${BUDGETS:-}" PLAN_FLAGS="${PLAN_FLAGS:-}"
N="${N:-16}" R="${R:-3}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}" TEXT="${TEXT:-}"
for arg in "$@"; do
  case "$arg" in
    CONVERTED=* | HW=* | BUDGETS=* | PLAN_FLAGS=* | N=* | R=* | SPARROW=* | TEXT=*) declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "plan_accuracy: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [[ -z "$CONVERTED" || -z "$HW" || -z "$BUDGETS" ]]; then
  echo "plan_accuracy: CONVERTED, HW and BUDGETS are required (--help)" >&2
  exit 2
fi
text_flag=()
[[ -n "$TEXT" ]] && text_flag=(--text "$TEXT")
field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
echo "budget_mb threads cache_mib predicted_tok_s measured_tok_s hit_rate samples"
for b in $BUDGETS; do
  # shellcheck disable=SC2086
  plan=$("$SPARROW" plan -m "$CONVERTED" --hw "$HW" --budget-mb "$b" $PLAN_FLAGS --json)
  cache=$(field "['neuron_cache_bytes'] / 2**20" <<<"$plan")
  threads=$(field "['threads']" <<<"$plan")
  predicted=$(field "['predicted_tokens_per_s']" <<<"$plan")
  measured=$("$SPARROW" bench -m "$CONVERTED" -p 0 -n "$N" -t "$threads" -r "$R" --no-bandwidth \
      --cache-mb "$cache" "${text_flag[@]}" --json 2>/dev/null | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
print('%.2f %.3f %s' % (r['median_ts'], r['sparse']['cache']['hit_rate'],
                        ','.join('%.2f' % x for x in r['samples_ts'])))")
  printf '%s %s %.1f %.2f %s\n' "$b" "$threads" "$cache" "$predicted" "$measured"
done
