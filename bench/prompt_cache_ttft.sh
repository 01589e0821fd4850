#!/usr/bin/env bash
# Time to first token of a long system prompt after a restart: from the prompt cache on flash
# (--prompt-cache-dir) against computing it.
#
#   bench/prompt_cache_ttft.sh [SPARROWD=build/bin/sparrowd] [SPARROW=build/bin/sparrow] \
#       [SHAPE=smollm2-135m] [TYPE=q8_0] [CHARS=9000] [R=5] [T=2] [SCRATCH=dir] [PORT=18431]
#
# Makes a synthetic model of SHAPE/TYPE (`sparrow mkmodel`, the llama SPM vocabulary) in
# SCRATCH, and a prompt of the first CHARS characters of the KJV text (about 2,000 tokens).
# Each repetition: (1) a sparrowd without a prompt cache answers it (max_tokens 1): the
# recompute; (2) a sparrowd with an empty cache directory answers it and exits (writing the
# cache); (3) a new sparrowd on that directory answers it with the file pages dropped from the
# page cache (sync, then POSIX_FADV_DONTNEED per file: the blocks come from the device); (4)
# once more with them in the page cache. Prints each run's client-side time (curl, request to
# answer) and cached_tokens, then the medians. Sparrow only: no peer binary is involved.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPARROWD="${SPARROWD:-$REPO/build/bin/sparrowd}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
SHAPE="${SHAPE:-smollm2-135m}" TYPE="${TYPE:-q8_0}" CHARS="${CHARS:-9000}" R="${R:-5}" T="${T:-2}"
SCRATCH="${SCRATCH:-${TMPDIR:-/tmp}/sparrow-bench-models}" PORT="${PORT:-18431}"
VOCAB="${VOCAB:-$REPO/../shared/models/vocab/ggml-vocab-llama-spm.gguf}"
TEXT="${TEXT:-$REPO/../shared/kjv/text/kjv-eval.txt}"
for arg in "$@"; do
  case "$arg" in
    SPARROWD=* | SPARROW=* | SHAPE=* | TYPE=* | CHARS=* | R=* | T=* | SCRATCH=* | PORT=* | VOCAB=* | TEXT=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "prompt_cache_ttft.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
for b in "$SPARROWD" "$SPARROW"; do
  [[ -x "$b" ]] || { echo "prompt_cache_ttft.sh: no binary at $b; build it or pass its path" >&2; exit 2; }
done
command -v jq > /dev/null || { echo "prompt_cache_ttft.sh: jq is required" >&2; exit 2; }

mkdir -p "$SCRATCH"
MODEL="$SCRATCH/$SHAPE-$TYPE.gguf"
[[ -f "$MODEL" ]] || "$SPARROW" mkmodel --shape "$SHAPE" --type "$TYPE" --vocab "$VOCAB" -o "$MODEL" >&2
TMP="$(mktemp -d)"
PID=""
trap '[[ -n "$PID" ]] && kill "$PID" 2> /dev/null; rm -rf "$TMP"' EXIT
jq -n --rawfile t <(head -c "$CHARS" "$TEXT") \
  '{messages: [{role: "system", content: $t}, {role: "user", content: "Who?"}],
    max_tokens: 1, temperature: 0}' > "$TMP/req.json"

start() {  # extra sparrowd arguments
  "$SPARROWD" --model "$MODEL" --port "$PORT" --grpc-port -1 --threads "$T" --n-ctx 4096 \
    --memory-pressure 0 --hw-profile none "$@" > "$TMP/log" 2>&1 &
  PID=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && return 0
    sleep 0.1
  done
  echo "prompt_cache_ttft.sh: sparrowd did not start:" >&2; cat "$TMP/log" >&2; exit 1
}
stop() { kill -TERM "$PID"; wait "$PID" || true; PID=""; }
ask() {  # prints "seconds cached_tokens prompt_tokens"
  local s
  s=$(curl -s -o "$TMP/out.json" -w '%{time_total}' -H 'Content-Type: application/json' \
    --data @"$TMP/req.json" "http://127.0.0.1:$PORT/v1/chat/completions")
  echo "$s $(jq '.usage.prompt_tokens_details.cached_tokens' "$TMP/out.json") \
$(jq '.usage.prompt_tokens' "$TMP/out.json")"
}
drop_pages() {
  sync
  python3 - "$1" << 'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
}

: > "$TMP/runs"
for r in $(seq "$R"); do
  start; echo "recompute $(ask)" >> "$TMP/runs"; stop
  rm -rf "$TMP/cache"
  start --prompt-cache-dir "$TMP/cache"; echo "write $(ask)" >> "$TMP/runs"; stop
  drop_pages "$TMP/cache"
  start --prompt-cache-dir "$TMP/cache"; echo "flash $(ask)" >> "$TMP/runs"; stop
  start --prompt-cache-dir "$TMP/cache"; echo "pagecache $(ask)" >> "$TMP/runs"; stop
done
echo "# $SHAPE $TYPE, $(awk '{print $4; exit}' "$TMP/runs") prompt tokens, $T threads," \
  "cache $(du -sh "$TMP/cache" | cut -f1)"
echo "run seconds cached_tokens prompt_tokens"
cat "$TMP/runs"
for k in recompute write flash pagecache; do
  awk -v k="$k" '$1 == k {print $2}' "$TMP/runs" | sort -n |
    awk -v k="$k" '{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
      printf "median %s %.3f s\n", k, m}'
done
