#!/usr/bin/env bash
# A model bigger than the memory it may use: decode speed of Sparrow with the FFN on flash
# (a converted file, --cache-mb) against llama.cpp (mmap) and PowerInfer (CPU) under the same
# cgroup v1 memory limit, each run after the page cache is dropped (bench/cgroup_run.sh).
#
#   bench/flash_offload.sh CONVERTED=pwri7b.sparrow.gguf PWRI=pwri7b.gguf DENSE=llama7b.gguf \
#       LIMIT_MIB=2048 CACHE_MB=450 [LLAMA_BENCH=/path/llama-bench] \
#       [POWERINFER_BENCH=/path/PowerInfer/build/bin/llama-bench] [N=16] [T=2] [R=3] \
#       [SPARROW=build/bin/sparrow] [EXTRA="--cache-hot-share 0.5"]
#
# CONVERTED comes from `sparrow convert -m PWRI --calibrate TEXT`; PWRI from `sparrow mkmodel
# --format pwri --hot-profile powerlaw:A`; DENSE is the dense GGUF of the same shape and type
# (llama.cpp cannot read PWRI files). Each engine decodes N tokens after its own warm-up, R
# rounds (order reversed every other round). The table gives median tok/s, the cgroup's peak
# usage and OOM kills, and ratios to llama.cpp. Peers are never built here: pass their paths.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONVERTED="${CONVERTED:-}" PWRI="${PWRI:-}" DENSE="${DENSE:-}" LIMIT_MIB="${LIMIT_MIB:-2048}"
CACHE_MB="${CACHE_MB:-}" LLAMA_BENCH="${LLAMA_BENCH:-}" POWERINFER_BENCH="${POWERINFER_BENCH:-}"
N="${N:-16}" T="${T:-2}" R="${R:-3}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}" EXTRA="${EXTRA:-}"
for arg in "$@"; do
  case "$arg" in
    CONVERTED=* | PWRI=* | DENSE=* | LIMIT_MIB=* | CACHE_MB=* | LLAMA_BENCH=* | POWERINFER_BENCH=* | \
      N=* | T=* | R=* | SPARROW=* | EXTRA=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "flash_offload: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[[ -f "$CONVERTED" && -n "$CACHE_MB" ]] || { echo "flash_offload: CONVERTED= and CACHE_MB= are needed" >&2; exit 2; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print("%.3f" % statistics.median(v) if v else "-")' "$@"; }
run() {  # name command... -> prints "tok/s peak_mib oom_kills exit"
  local name=$1
  shift
  local line
  line=$("$REPO/bench/cgroup_run.sh" "$LIMIT_MIB" "$SCRATCH/$name" -- "$@")
  local ts
  case "$name" in
    sparrow) ts=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median_ts"])' "$SCRATCH/$name.out" 2>/dev/null || echo 0) ;;
    *) ts=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))[0]["avg_ts"])' "$SCRATCH/$name.out" 2>/dev/null || echo 0) ;;
  esac
  python3 - "$ts" "$line" <<'EOF'
import sys
kv = dict(x.split("=") for x in sys.argv[2].split())
print(sys.argv[1], kv["peak_mib"], kv["oom_kills"], kv["exit"])
EOF
}

declare -A ts=() peak=() oom=() ex=()
jobs=(sparrow)
[[ -n "$LLAMA_BENCH" && -f "$DENSE" ]] && jobs+=(llama)
[[ -n "$POWERINFER_BENCH" && -f "$PWRI" ]] && jobs+=(powerinfer)
for ((rep = 0; rep < R; ++rep)); do
  order=("${jobs[@]}")
  (( rep % 2 == 1 )) && mapfile -t order < <(printf '%s\n' "${jobs[@]}" | tac)
  for j in "${order[@]}"; do
    case "$j" in
      # shellcheck disable=SC2086
      sparrow) out=$(run sparrow "$SPARROW" bench -m "$CONVERTED" -p 0 -n "$N" -t "$T" -r 1 --no-bandwidth --json --cache-mb "$CACHE_MB" $EXTRA) ;;
      llama) out=$(run llama "$LLAMA_BENCH" -m "$DENSE" -p 0 -n "$N" -t "$T" -r 1 -o json) ;;
      powerinfer) out=$(run powerinfer "$POWERINFER_BENCH" -m "$PWRI" -p 0 -n "$N" -t "$T" -r 1 -ngl 0 -o json) ;;
    esac
    read -r v p o e <<<"$out"
    ts[$j]+="$v "
    peak[$j]+="$p "
    oom[$j]=$(( ${oom[$j]:-0} + o ))
    [[ "$e" == 0 ]] || ex[$j]+="$e "
  done
done
llama=$(median ${ts[llama]:-})
echo "limit ${LIMIT_MIB} MiB, $N tokens, t=$T, median of $R; Sparrow --cache-mb $CACHE_MB $EXTRA"
echo "| engine | file | tok/s | vs llama.cpp | peak MiB (max) | OOM kills | failed runs |"
echo "| --- | --- | ---: | ---: | ---: | ---: | --- |"
for j in "${jobs[@]}"; do
  case "$j" in sparrow) f=$CONVERTED ;; llama) f=$DENSE ;; powerinfer) f=$PWRI ;; esac
  m=$(median ${ts[$j]})
  r=$(python3 -c "import sys; a,b=sys.argv[1],sys.argv[2]; print('%.2f' % (float(a)/float(b)) if b not in ('-','0.000') and a != '-' else '-')" "$m" "$llama")
  p=$(python3 -c 'import sys; print(max(float(x) for x in sys.argv[1:]))' ${peak[$j]})
  echo "| $j | $(basename "$f") | $m | $r | $p | ${oom[$j]} | ${ex[$j]:-none} |"
done
