#!/usr/bin/env bash
# Serving benchmark: sparrowd against llama.cpp's llama-server on the same model, threads and
# KV capacity, in one run. For each client count and prompt mix it starts one server, drives it
# with bench/loadgen/loadgen.mjs, stops it, then does the same with the other (alternating which
# goes first), R times; prints the medians and the ratios sparrow / llama.cpp as Markdown tables.
#
#   bench/serve_compare.sh LLAMA_SERVER=/path/to/llama-server MODEL=/tmp/sbm/smollm2-q8_0.gguf \
#       [SPARROWD=build/bin/sparrowd] [T=2] [CLIENTS=1,4,8,16] [PREFIX=0,0.8] [R=3] \
#       [REQUESTS=4] [PROMPT_WORDS=200] [MAX_TOKENS=64] [CTX=1024] [OUT=dir]
#       [SPARROWD_ARGS="--step-time-target-ms 40"]
#
# Both servers get T compute threads and room for N requests of CTX positions each: sparrowd
# --max-running N --kv-blocks N*CTX/16, llama-server -np N -c N*CTX (continuous batching is its
# default). The raw loadgen JSON of every run is kept in OUT (default: a fresh /tmp directory).
# llama.cpp is not part of this project: build it yourself and pass its binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

SPARROWD=build/bin/sparrowd LLAMA_SERVER="" MODEL="" T=2 CLIENTS=1,4,8,16 PREFIX=0,0.8 R=3
REQUESTS=4 PROMPT_WORDS=200 MAX_TOKENS=64 CTX=1024 OUT="" SPARROWD_ARGS=""
for kv in "$@"; do
  case "$kv" in
    SPARROWD=* | LLAMA_SERVER=* | MODEL=* | T=* | CLIENTS=* | PREFIX=* | R=* | REQUESTS=* | \
      PROMPT_WORDS=* | MAX_TOKENS=* | CTX=* | OUT=* | SPARROWD_ARGS=*) declare "${kv%%=*}=${kv#*=}" ;;
    *) echo "serve_compare: unknown argument '$kv' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$SPARROWD" ] || { echo "serve_compare: SPARROWD='$SPARROWD' is not executable" >&2; exit 2; }
[ -x "$LLAMA_SERVER" ] || { echo "serve_compare: set LLAMA_SERVER to llama-server's path" >&2; exit 2; }
[ -f "$MODEL" ] || { echo "serve_compare: MODEL='$MODEL' is not a file" >&2; exit 2; }
command -v node > /dev/null || { echo "serve_compare: needs node (18+) on PATH" >&2; exit 2; }
command -v curl > /dev/null || { echo "serve_compare: needs curl on PATH" >&2; exit 2; }

if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/serve_compare.XXXXXX); else mkdir -p "$OUT"; fi
PORT=$((20000 + RANDOM % 20000))
. "$(dirname "$0")/server_lifecycle.sh"  # SERVER_PID, stop_server, wait_ready

# run_one ENGINE N PREFIX RUN: appends loadgen's JSON line to $OUT/ENGINE.n$N.p$PREFIX.jsonl
run_one() {
  local engine=$1 n=$2 prefix=$3 run=$4 log="$OUT/$1.n$2.p$3.r$4.log"
  if [ "$engine" = sparrow ]; then
    "$SPARROWD" --model "$MODEL" --port "$PORT" --grpc-port -1 --threads "$T" --n-ctx "$CTX" \
      --max-running "$n" --kv-blocks $(((n * CTX + 15) / 16)) --log-level warn $SPARROWD_ARGS \
      > "$log" 2>&1 &
  else
    "$LLAMA_SERVER" -m "$MODEL" --port "$PORT" -t "$T" -np "$n" -c $((n * CTX)) > "$log" 2>&1 &
  fi
  SERVER_PID=$!
  if ! wait_ready "http://127.0.0.1:$PORT"; then
    echo "serve_compare: $engine did not start on port $PORT; see $log" >&2
    exit 1
  fi
  if ! node bench/loadgen/loadgen.mjs --url "http://127.0.0.1:$PORT" --clients "$n" \
    --requests "$REQUESTS" --prompt-words "$PROMPT_WORDS" --max-tokens "$MAX_TOKENS" \
    --shared-prefix "$prefix" --json >> "$OUT/$engine.n$n.p$prefix.jsonl"; then
    echo "serve_compare: $engine had failed requests (n=$n prefix=$prefix run $run); see $log" \
      "and $OUT/$engine.n$n.p$prefix.jsonl" >&2
  fi
  stop_server
  PORT=$((PORT + 1))
}

# median KEY FILE: median over the JSON lines of FILE of field KEY
median() {
  node -e '
    const [key, file] = process.argv.slice(1);
    const xs = require("fs").readFileSync(file, "utf8").trim().split("\n")
      .map((l) => JSON.parse(l)[key]).sort((a, b) => a - b);
    const m = xs.length % 2 ? xs[(xs.length - 1) / 2] : (xs[xs.length / 2 - 1] + xs[xs.length / 2]) / 2;
    console.log(m);' "$1" "$2"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

IFS=, read -ra ns <<< "$CLIENTS"
IFS=, read -ra prefixes <<< "$PREFIX"
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git rev-parse HEAD 2> /dev/null || echo unknown);" \
  "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($(nproc) cores);" \
  "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Model: $MODEL; threads $T; $REQUESTS requests per client, $PROMPT_WORDS prompt words," \
  "$MAX_TOKENS generated tokens each; KV room: $CTX positions per client; medians of $R runs;" \
  "raw runs in $OUT"
for n in "${ns[@]}"; do
  for p in "${prefixes[@]}"; do
    for r in $(seq 1 "$R"); do
      if [ $((r % 2)) = 1 ]; then order="sparrow llama"; else order="llama sparrow"; fi
      for e in $order; do run_one "$e" "$n" "$p" "$r"; done
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

declare -A M=()
keys="tokens_per_s ttft_ms_p50 ttft_ms_p99 tbt_ms_p50 tbt_ms_p99 errors prompt_tokens cached_prompt_tokens"
for n in "${ns[@]}"; do
  for p in "${prefixes[@]}"; do
    for e in sparrow llama; do
      for k in $keys; do M[$e.$n.$p.$k]=$(median "$k" "$OUT/$e.n$n.p$p.jsonl"); done
    done
  done
done

echo "| clients | shared prefix | sparrow tok/s | llama.cpp tok/s | ratio | sparrow TTFT p50 / p99 ms | llama.cpp TTFT p50 / p99 ms | p99 TTFT ratio | sparrow TBT p50 / p99 ms | llama.cpp TBT p50 / p99 ms | prompt cached sparrow / llama.cpp | failed |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${ns[@]}"; do
  for p in "${prefixes[@]}"; do
    s="sparrow.$n.$p" l="llama.$n.$p"
    printf '| %s | %s | %.1f | %.1f | %s | %.0f / %.0f | %.0f / %.0f | %s | %.1f / %.1f | %.1f / %.1f | %s %% / %s %% | %s / %s |\n' \
      "$n" "$p" "${M[$s.tokens_per_s]}" "${M[$l.tokens_per_s]}" \
      "$(ratio "${M[$s.tokens_per_s]}" "${M[$l.tokens_per_s]}")" \
      "${M[$s.ttft_ms_p50]}" "${M[$s.ttft_ms_p99]}" "${M[$l.ttft_ms_p50]}" "${M[$l.ttft_ms_p99]}" \
      "$(ratio "${M[$s.ttft_ms_p99]}" "${M[$l.ttft_ms_p99]}")" \
      "${M[$s.tbt_ms_p50]}" "${M[$s.tbt_ms_p99]}" "${M[$l.tbt_ms_p50]}" "${M[$l.tbt_ms_p99]}" \
      "$(awk -v c="${M[$s.cached_prompt_tokens]}" -v t="${M[$s.prompt_tokens]}" 'BEGIN { printf "%.0f", (t > 0 ? 100 * c / t : 0) }')" \
      "$(awk -v c="${M[$l.cached_prompt_tokens]}" -v t="${M[$l.prompt_tokens]}" 'BEGIN { printf "%.0f", (t > 0 ? 100 * c / t : 0) }')" \
      "${M[$s.errors]}" "${M[$l.errors]}"
  done
done

# Prefix reuse: each engine against itself, shared-prefix run over the first (unshared) mix.
base=${prefixes[0]}
if [ "${#prefixes[@]}" -gt 1 ]; then
  echo
  echo "Prefix reuse (each engine against itself: prefix $base run / shared-prefix run; > 1 is a gain)"
  echo
  echo "| clients | shared prefix | sparrow tok/s gain | llama.cpp tok/s gain | sparrow TTFT p50 gain | llama.cpp TTFT p50 gain |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  for n in "${ns[@]}"; do
    for p in "${prefixes[@]:1}"; do
      printf '| %s | %s | %s | %s | %s | %s |\n' "$n" "$p" \
        "$(ratio "${M[sparrow.$n.$p.tokens_per_s]}" "${M[sparrow.$n.$base.tokens_per_s]}")" \
        "$(ratio "${M[llama.$n.$p.tokens_per_s]}" "${M[llama.$n.$base.tokens_per_s]}")" \
        "$(ratio "${M[sparrow.$n.$base.ttft_ms_p50]}" "${M[sparrow.$n.$p.ttft_ms_p50]}")" \
        "$(ratio "${M[llama.$n.$base.ttft_ms_p50]}" "${M[llama.$n.$p.ttft_ms_p50]}")"
    done
  done
fi
