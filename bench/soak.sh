#!/usr/bin/env bash
# Soak: sparrowd on stories260K under 64 concurrent clients mixing normal, cancelled,
# slow-reading and malformed requests (bench/soak/soak.mjs) for SECONDS (default 600), with a
# line every 10 s (requests by kind, unexpected errors, p99 latency, RSS). Exits 1 on any
# unexpected error or RSS growth after the first minute.
#
#   bench/soak.sh [SPARROWD=build/bin/sparrowd] [MODEL=../shared/models/stories260K.gguf]
#                 [SECONDS=600] [CLIENTS=64] [T=2] [OUT=dir]
set -euo pipefail
cd "$(dirname "$0")/.."
SPARROWD=build/bin/sparrowd MODEL=../shared/models/stories260K.gguf SECONDS_=600 CLIENTS=64 T=2
OUT=""
for kv in "$@"; do
  case "$kv" in
    SPARROWD=* | MODEL=* | CLIENTS=* | T=* | OUT=*) declare "${kv%%=*}=${kv#*=}" ;;
    SECONDS=*) SECONDS_="${kv#*=}" ;;
    *) echo "soak: unknown argument '$kv' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$SPARROWD" ] || { echo "soak: SPARROWD='$SPARROWD' is not executable" >&2; exit 2; }
[ -f "$MODEL" ] || { echo "soak: MODEL='$MODEL' is not a file" >&2; exit 2; }
command -v node > /dev/null || { echo "soak: needs node (18+) on PATH" >&2; exit 2; }
if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/soak.XXXXXX); else mkdir -p "$OUT"; fi

# Short write timeout and buffer cap so slow readers hit them during the run; room for all
# clients in the queue.
"$SPARROWD" --model "$MODEL" --port 0 --grpc-port -1 --threads "$T" --max-running 16 \
  --max-queue 256 --write-timeout-ms 3000 --max-buffered-bytes 65536 --log-level warn \
  > "$OUT/sparrowd.log" 2>&1 &
PID=$!
trap 'kill $PID 2> /dev/null || true' EXIT
PORT=""
for _ in $(seq 1 200); do
  PORT=$(sed -n 's/.*HTTP listening on http:\/\/[^ ]*:\([0-9]*\)$/\1/p' "$OUT/sparrowd.log" | head -1)
  [ -n "$PORT" ] && break
  sleep 0.05
done
[ -n "$PORT" ] || { echo "soak: sparrowd did not start:"; cat "$OUT/sparrowd.log"; exit 1; }
echo "soak: sparrowd pid $PID on port $PORT, $CLIENTS clients for ${SECONDS_}s; output in $OUT"
status=0
node bench/soak/soak.mjs --port "$PORT" --pid "$PID" --clients "$CLIENTS" --seconds "$SECONDS_" \
  --out "$OUT/summary.json" || status=$?
kill -TERM "$PID"
wait "$PID" || { echo "soak: sparrowd exited non-zero"; status=1; }
trap - EXIT
echo "soak: sparrowd log lines at warn or above: $(grep -c '\] \[\(warning\|error\|critical\)\]' "$OUT/sparrowd.log" || true)"
exit "$status"
