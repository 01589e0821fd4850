#!/usr/bin/env bash
# Serving benchmark: sparrowd against llama.cpp's llama-server on the same model, threads and
# KV capacity, in one run. For each client count and prompt mix it starts one server, drives it
# with bench/loadgen.mjs, stops it, then does the same with the other (alternating which goes
# first), R times; prints the medians and the ratios sparrow / llama.cpp as a Markdown table.
#
#   bench/serve_compare.sh SPARROWD=build/bin/sparrowd LLAMA_SERVER=/path/to/llama-server \
#       MODEL=/tmp/sbm/smollm2-q8_0.gguf [T=2] [CLIENTS=1,4,8,16] [PREFIX=0,0.8] [R=3] \
#       [REQUESTS=4] [PROMPT_WORDS=200] [MAX_TOKENS=64] [CTX=1024]
#
# llama.cpp is not part of this project: build it yourself and pass its binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

SPARROWD=build/bin/sparrowd LLAMA_SERVER="" MODEL="" T=2 CLIENTS=1,4,8,16 PREFIX=0,0.8 R=3
REQUESTS=4 PROMPT_WORDS=200 MAX_TOKENS=64 CTX=1024
for kv in "$@"; do
  case "$kv" in
    *=*) declare "${kv%%=*}=${kv#*=}" ;;
    *) echo "serve_compare: arguments are KEY=VALUE, got '$kv'" >&2; exit 2 ;;
  esac
done
[ -x "$SPARROWD" ] || { echo "serve_compare: SPARROWD='$SPARROWD' is not executable" >&2; exit 2; }
[ -x "$LLAMA_SERVER" ] || { echo "serve_compare: set LLAMA_SERVER to llama-server's path" >&2; exit 2; }
[ -f "$MODEL" ] || { echo "serve_compare: MODEL='$MODEL' is not a file" >&2; exit 2; }

PORT=$((20000 + RANDOM % 20000))
LOG=$(mktemp -d /tmp/serve_compare.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

wait_ready() {  # url, pid
  for _ in $(seq 1 240); do
    if curl -sf "$1/health" > /dev/null 2>&1; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}

# run_one ENGINE N PREFIX -> prints loadgen's JSON line
run_one() {
  local engine=$1 n=$2 prefix=$3 pid
  if [ "$engine" = sparrow ]; then
    "$SPARROWD" --model "$MODEL" --port "$PORT" --grpc-port -1 --threads "$T" --n-ctx "$CTX" \
      --max-running "$n" --kv-blocks $(( (n * CTX + 15) / 16 )) --log-level warn \
      > "$LOG/sparrow.log" 2>&1 &
  else
    "$LLAMA_SERVER" -m "$MODEL" --port "$PORT" -t "$T" -np "$n" -c $((n * CTX)) \
      > "$LOG/llama.log" 2>&1 &
  fi
  pid=$!
  if ! wait_ready "http://127.0.0.1:$PORT" "$pid"; then
    echo "serve_compare: $engine did not start; log in $LOG" >&2
    exit 1
  fi
  node bench/loadgen.mjs --url "http://127.0.0.1:$PORT" --clients "$n" --requests "$REQUESTS" \
    --prompt-words "$PROMPT_WORDS" --max-tokens "$MAX_TOKENS" --shared-prefix "$prefix" --json
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  PORT=$((PORT + 1))
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { node -e "const j=JSON.parse(process.argv[1]); console.log(j['$1'])" "$2"; }

echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git rev-parse --short HEAD); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "Model: $MODEL; threads $T; $REQUESTS requests per client, $PROMPT_WORDS prompt words, $MAX_TOKENS tokens each; context $CTX per client; medians of $R"
echo
echo "| clients | shared prefix | sparrow tok/s | llama.cpp tok/s | ratio | sparrow TTFT p50/p99 ms | llama.cpp TTFT p50/p99 ms | sparrow TBT p50/p99 ms | llama.cpp TBT p50/p99 ms |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
IFS=, read -ra ns <<< "$CLIENTS"
IFS=, read -ra prefixes <<< "$PREFIX"
for n in "${ns[@]}"; do
  for p in "${prefixes[@]}"; do
    : > "$LOG/sparrow.runs"; : > "$LOG/llama.runs"
    for r in $(seq 1 "$R"); do
      if [ $((r % 2)) = 1 ]; then order="sparrow llama"; else order="llama sparrow"; fi
      for e in $order; do run_one "$e" "$n" "$p" >> "$LOG/$e.runs"; done
    done
    declare -A m=()
    for e in sparrow llama; do
      for k in tokens_per_s ttft_ms_p50 ttft_ms_p99 tbt_ms_p50 tbt_ms_p99; do
        m[$e.$k]=$(while read -r line; do field "$k" "$line"; done < "$LOG/$e.runs" | median)
      done
    done
    ratio=$(awk -v a="${m[sparrow.tokens_per_s]}" -v b="${m[llama.tokens_per_s]}" 'BEGIN {printf "%.3f", a / b}')
    printf '| %s | %s | %.1f | %.1f | %s | %.0f / %.0f | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f |\n' \
      "$n" "$p" "${m[sparrow.tokens_per_s]}" "${m[llama.tokens_per_s]}" "$ratio" \
      "${m[sparrow.ttft_ms_p50]}" "${m[sparrow.ttft_ms_p99]}" "${m[llama.ttft_ms_p50]}" "${m[llama.ttft_ms_p99]}" \
      "${m[sparrow.tbt_ms_p50]}" "${m[sparrow.tbt_ms_p99]}" "${m[llama.tbt_ms_p50]}" "${m[llama.tbt_ms_p99]}"
    unset m
  done
done
