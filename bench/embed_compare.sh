#!/usr/bin/env bash
# Embedding throughput: sparrowd's /v1/embeddings against llama.cpp's llama-server --embeddings
# on the same model, threads and pooling, in one run, alternating which goes first, R times;
# prints the medians of texts/s and the ratio sparrow / llama.cpp as a Markdown row.
#
#   bench/embed_compare.sh LLAMA_SERVER=/path/to/llama-server MODEL=/path/to/model.gguf \
#       [SPARROWD=build/bin/sparrowd] [T=2] [POOLING=mean] [CLIENTS=4] [REQUESTS=8] [BATCH=8] \
#       [WORDS=64] [CTX=512] [R=3] [OUT=dir]
#
# Both servers get T threads and room for CLIENTS*BATCH texts of CTX positions: sparrowd
# --max-running CLIENTS*BATCH --n-ctx CTX, llama-server -np CLIENTS*BATCH -c that many CTX
# (-b and -ub CTX, as an embedding must fit one micro-batch there). bench/loadgen/embed_load.mjs
# sends the requests; its JSON lines are kept in OUT. llama.cpp is not part of this project:
# build it yourself and pass its binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."

SPARROWD=build/bin/sparrowd LLAMA_SERVER="" MODEL="" T=2 POOLING=mean CLIENTS=4 REQUESTS=8
BATCH=8 WORDS=64 CTX=512 R=3 OUT=""
for kv in "$@"; do
  case "$kv" in
    SPARROWD=* | LLAMA_SERVER=* | MODEL=* | T=* | POOLING=* | CLIENTS=* | REQUESTS=* | BATCH=* | \
      WORDS=* | CTX=* | R=* | OUT=*) declare "${kv%%=*}=${kv#*=}" ;;
    *) echo "embed_compare: unknown argument '$kv' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$SPARROWD" ] || { echo "embed_compare: SPARROWD='$SPARROWD' is not executable" >&2; exit 2; }
[ -x "$LLAMA_SERVER" ] || { echo "embed_compare: set LLAMA_SERVER to llama-server's path" >&2; exit 2; }
[ -f "$MODEL" ] || { echo "embed_compare: MODEL='$MODEL' is not a file" >&2; exit 2; }
command -v node > /dev/null || { echo "embed_compare: needs node (18+) on PATH" >&2; exit 2; }
command -v curl > /dev/null || { echo "embed_compare: needs curl on PATH" >&2; exit 2; }

if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/embed_compare.XXXXXX); else mkdir -p "$OUT"; fi
PORT=$((20000 + RANDOM % 20000))
SLOTS=$((CLIENTS * BATCH))
. "$(dirname "$0")/server_lifecycle.sh"  # SERVER_PID, stop_server, wait_ready

run_one() {  # ENGINE RUN: appends embed_load's JSON line to $OUT/ENGINE.jsonl
  local engine=$1 log="$OUT/$1.r$2.log"
  if [ "$engine" = sparrow ]; then
    "$SPARROWD" --model "$MODEL" --port "$PORT" --grpc-port -1 --threads "$T" --n-ctx "$CTX" \
      --max-running "$SLOTS" --max-queue $((2 * SLOTS)) --pooling "$POOLING" --log-level warn \
      --hw-profile none > "$log" 2>&1 &
  else
    "$LLAMA_SERVER" -m "$MODEL" --port "$PORT" -t "$T" --embeddings --pooling "$POOLING" \
      -np "$SLOTS" -c $((SLOTS * CTX)) -b "$CTX" -ub "$CTX" > "$log" 2>&1 &
  fi
  SERVER_PID=$!
  if ! wait_ready "http://127.0.0.1:$PORT"; then
    echo "embed_compare: $engine did not start on port $PORT; see $log" >&2
    exit 1
  fi
  node bench/loadgen/embed_load.mjs --url "http://127.0.0.1:$PORT" --clients "$CLIENTS" \
    --requests "$REQUESTS" --batch "$BATCH" --words "$WORDS" >> "$OUT/$engine.jsonl"
  stop_server
  PORT=$((PORT + 1))
}

median() {  # KEY FILE
  node -e '
    const [key, file] = process.argv.slice(1);
    const xs = require("fs").readFileSync(file, "utf8").trim().split("\n")
      .map((l) => JSON.parse(l)[key]).sort((a, b) => a - b);
    const m = xs.length % 2 ? xs[(xs.length - 1) / 2] : (xs[xs.length / 2 - 1] + xs[xs.length / 2]) / 2;
    console.log(m);' "$1" "$2"
}

echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git rev-parse HEAD 2> /dev/null || echo unknown);" \
  "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($(nproc) cores);" \
  "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Model: $MODEL; threads $T; pooling $POOLING; $CLIENTS clients x $REQUESTS requests of" \
  "$BATCH texts of $WORDS words; medians of $R runs; raw runs in $OUT"
for r in $(seq 1 "$R"); do
  if [ $((r % 2)) = 1 ]; then order="sparrow llama"; else order="llama sparrow"; fi
  for e in $order; do run_one "$e" "$r"; done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
s=$(median texts_per_s "$OUT/sparrow.jsonl") l=$(median texts_per_s "$OUT/llama.jsonl")
se=$(median errors "$OUT/sparrow.jsonl") le=$(median errors "$OUT/llama.jsonl")
echo
echo "| sparrow texts/s | llama.cpp texts/s | ratio | failed requests sparrow / llama.cpp |"
echo "| ---: | ---: | ---: | ---: |"
printf '| %.1f | %.1f | %s | %s / %s |\n' "$s" "$l" \
  "$(awk -v a="$s" -v b="$l" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" "$se" "$le"
