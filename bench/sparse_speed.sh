#!/usr/bin/env bash
# Decode speed of the sparse FFN against dense Sparrow and dense llama.cpp, same file, same run.
#
#   bench/sparse_speed.sh LLAMA_BENCH=/path/to/llama-bench MODEL=model.gguf PROFILE=model.profile \
#       [LEVELS="0.5 0.7"] [METHODS="cats teal-down"] [N=64] [T=1,2] [R=3] [SPARROW=build/bin/sparrow]
#
# For each thread count: llama-bench tg (dense), sparrow bench tg dense, then sparrow at each
# method and level, alternating the order of the engines each repetition round; prints median
# tokens/s, the active share of FFN neurons, and ratios against both dense runs. The profile
# comes from `sparrow profile` (its thresholds give the asked sparsity on that model). The peer
# binary is never built here: pass the path of an existing one (or none to skip llama.cpp).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_BENCH="${LLAMA_BENCH:-}" MODEL="${MODEL:-}" PROFILE="${PROFILE:-}"
LEVELS="${LEVELS:-0.5 0.7}" METHODS="${METHODS:-cats teal-down}"
N="${N:-64}" T="${T:-1,2}" R="${R:-3}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
for arg in "$@"; do
  case "$arg" in
    LLAMA_BENCH=* | MODEL=* | PROFILE=* | LEVELS=* | METHODS=* | N=* | T=* | R=* | SPARROW=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "sparse_speed: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[[ -f "$MODEL" && -f "$PROFILE" ]] || { echo "sparse_speed: MODEL= and PROFILE= must name files" >&2; exit 2; }

median() { python3 -c 'import statistics,sys; print("%.2f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
sparrow_tg() {  # threads [flags] -> "tok/s active"
  "$SPARROW" bench -m "$MODEL" -p 0 -n "$N" -t "$1" -r 1 --no-bandwidth --json "${@:2}" 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print("%.3f %.3f" % (r["median_ts"], r["sparse"]["active_fraction"]))'
}
llama_tg() {
  "$LLAMA_BENCH" -m "$MODEL" -p 0 -n "$N" -t "$1" -r 1 -o json 2>/dev/null |
    python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)[0]["avg_ts"])'
}

echo "| threads | engine | method | sparsity | active | tok/s (median of $R) | vs sparrow dense | vs llama.cpp |"
echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"
IFS=',' read -ra THREADS <<<"$T"
for t in "${THREADS[@]}"; do
  declare -A runs=() active=()
  configs=("dense|0")
  for m in $METHODS; do for s in $LEVELS; do configs+=("$m|$s"); done; done
  for ((rep = 0; rep < R; ++rep)); do
    order=("${configs[@]}")
    (( rep % 2 == 1 )) && order=($(printf '%s\n' "${configs[@]}" | tac))
    if [[ -n "$LLAMA_BENCH" && $((rep % 2)) -eq 0 ]]; then runs[llama]+="$(llama_tg "$t") "; fi
    for c in "${order[@]}"; do
      IFS='|' read -r m s <<<"$c"
      if [[ "$m" == dense ]]; then read -r v a < <(sparrow_tg "$t")
      else read -r v a < <(sparrow_tg "$t" --profile "$PROFILE" --sparsity "$s" --sparsity-method "$m"); fi
      runs[$c]+="$v "
      active[$c]="$a"
    done
    if [[ -n "$LLAMA_BENCH" && $((rep % 2)) -eq 1 ]]; then runs[llama]+="$(llama_tg "$t") "; fi
  done
  dense=$(median ${runs[dense|0]})
  llama=""
  [[ -n "$LLAMA_BENCH" ]] && llama=$(median ${runs[llama]}) && \
    echo "| $t | llama.cpp | dense | 0 | 1.000 | $llama | $(python3 -c "print('%.2f' % ($llama/$dense))") | 1.00 |"
  for c in "${configs[@]}"; do
    IFS='|' read -r m s <<<"$c"
    v=$(median ${runs[$c]})
    vs_llama="-"
    [[ -n "$llama" ]] && vs_llama=$(python3 -c "print('%.2f' % ($v/$llama))")
    echo "| $t | sparrow | $m | $s | ${active[$c]} | $v | $(python3 -c "print('%.2f' % ($v/$dense))") | $vs_llama |"
  done
  unset runs active
done
