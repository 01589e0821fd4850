#!/usr/bin/env bash
# Decode speed of Sparrow on PowerInfer-format (PWRI) files against PowerInfer on the same files
# and against dense llama.cpp and dense Sparrow on the dense GGUF of the same shape, same run.
#
#   bench/pwri_speed.sh DENSE=llama7b-q4_0.gguf PWRI="pwri-a75.gguf pwri-a50.gguf" \
#       [LLAMA_BENCH=/path/to/llama-bench] [POWERINFER=/path/to/PowerInfer/main] \
#       [N=32] [T=1,2] [R=3] [SPARROW=build/bin/sparrow]
#
# The files come from `sparrow mkmodel --format pwri --active A` (the predictor picks about A of
# the neurons per token) and `sparrow mkmodel` with the same shape and type. Each repetition
# round runs every engine once, the order reversed every other round; the table gives median
# tokens/s, Sparrow's measured active share, and ratios. PowerInfer's figure is the eval rate its
# `main` prints for N greedy tokens after a 2-token prompt. Peers are never built here: pass the
# paths of existing binaries (either may be left out).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DENSE="${DENSE:-}" PWRI="${PWRI:-}" LLAMA_BENCH="${LLAMA_BENCH:-}" POWERINFER="${POWERINFER:-}"
N="${N:-32}" T="${T:-1,2}" R="${R:-3}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
for arg in "$@"; do
  case "$arg" in
    DENSE=* | PWRI=* | LLAMA_BENCH=* | POWERINFER=* | N=* | T=* | R=* | SPARROW=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "pwri_speed: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[[ -n "$PWRI" ]] || { echo "pwri_speed: PWRI= must name PWRI files" >&2; exit 2; }
for f in $DENSE $PWRI; do [[ -f "$f" ]] || { echo "pwri_speed: no file $f" >&2; exit 2; }; done
[[ -z "$LLAMA_BENCH" || -x "$LLAMA_BENCH" ]] || { echo "pwri_speed: $LLAMA_BENCH is not executable" >&2; exit 2; }
[[ -z "$POWERINFER" || -x "$POWERINFER" ]] || { echo "pwri_speed: $POWERINFER is not executable" >&2; exit 2; }

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
median() { python3 -c 'import statistics,sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
sparrow_tg() {  # model threads -> "tok/s active"
  "$SPARROW" bench -m "$1" -p 0 -n "$N" -t "$2" -r 1 --no-bandwidth --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; s=r.get("sparse") or {}; print("%.3f %.3f" % (r["median_ts"], s.get("active_fraction", 1.0)))'
}
llama_tg() {  # model threads
  "$LLAMA_BENCH" -m "$1" -p 0 -n "$N" -t "$2" -r 1 -o json 2>/dev/null |
    python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)[0]["avg_ts"])'
}
powerinfer_tg() {  # model threads (run in a scratch folder: PowerInfer's main writes main.log)
  (model="$(realpath "$1")" && cd "$SCRATCH" && "$POWERINFER" -m "$model" -p " Hello" -n "$N" -t "$2" --temp 0 --ignore-eos 2>&1) |
    python3 -c 'import re,sys
m = [l for l in sys.stdin if "eval time" in l and "prompt" not in l]
print(re.search(r"([0-9.]+) tokens per second", m[-1]).group(1))'
}
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.2f' % (a / b) if b > 0 else '-')" "$1" "$2"; }

echo "| threads | engine | file | active | tok/s (median of $R) | vs llama.cpp dense | vs Sparrow dense | vs PowerInfer |"
echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"
IFS=',' read -ra THREADS <<<"$T"
for t in "${THREADS[@]}"; do
  declare -A runs=() active=()
  jobs=()
  [[ -n "$LLAMA_BENCH" && -n "$DENSE" ]] && jobs+=("llama|$DENSE")
  [[ -n "$DENSE" ]] && jobs+=("sparrow|$DENSE")
  for f in $PWRI; do
    jobs+=("sparrow|$f")
    [[ -n "$POWERINFER" ]] && jobs+=("powerinfer|$f")
  done
  for ((rep = 0; rep < R; ++rep)); do
    order=("${jobs[@]}")
    (( rep % 2 == 1 )) && mapfile -t order < <(printf '%s\n' "${jobs[@]}" | tac)
    for j in "${order[@]}"; do
      IFS='|' read -r engine file <<<"$j"
      case "$engine" in
        llama) v=$(llama_tg "$file" "$t") ;;
        powerinfer) v=$(powerinfer_tg "$file" "$t") ;;
        sparrow) read -r v a < <(sparrow_tg "$file" "$t"); active[$j]="$a" ;;
      esac
      runs[$j]+="$v "
    done
  done
  declare -A med=()
  for j in "${jobs[@]}"; do med[$j]=$(median ${runs[$j]}); done
  llama="${med[llama|$DENSE]:-0}" dense="${med[sparrow|$DENSE]:-0}"
  for j in "${jobs[@]}"; do
    IFS='|' read -r engine file <<<"$j"
    pi="${med[powerinfer|$file]:-0}"
    vs_pi="-"
    [[ "$engine" == sparrow && "$file" != "$DENSE" ]] && vs_pi=$(ratio "${med[$j]}" "$pi")
    echo "| $t | $engine | $(basename "$file") | ${active[$j]:--} | ${med[$j]} | $(ratio "${med[$j]}" "$llama") | $(ratio "${med[$j]}" "$dense") | $vs_pi |"
  done
  unset runs active med
done
