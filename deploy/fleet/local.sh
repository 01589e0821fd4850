#!/usr/bin/env bash
# Starts N sparrowd replicas of one model on loopback and HAProxy in front of them, configured
# by deploy/fleet/haproxy.cfg: a fleet to try on one machine. Ctrl-C (or SIGTERM) stops all.
#
#   deploy/fleet/local.sh --replicas 3 --model ../shared/models/stories260K.gguf --port 8080
#
# Clients talk to 127.0.0.1:PORT as to one sparrowd; replica i listens on HTTP PORT+i (gRPC off).
# Every replica takes the admin key in DIR/admin.keys, so `sparrowctl --port PORT+i --key-file
# DIR/admin.keys drain` takes one out of the rotation. Logs: DIR/replica-i.log, DIR/haproxy.log.
# Flags after `--` go to every sparrowd (e.g. -- --threads 1 --max-running 4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'USAGE'

Options:
  --replicas N      sparrowd processes to start [3]
  --model PATH      GGUF model every replica serves [required]
  --port P          HAProxy's port; replicas take P+1..P+N [8080]
  --dir DIR         where keys, the generated HAProxy config and logs go [a new temporary dir]
  --sparrowd PATH   the sparrowd binary [build/bin/sparrowd, else sparrowd on PATH]
  --haproxy PATH    the haproxy binary [haproxy on PATH]
  -h, --help        this text
USAGE
}

replicas=3
model=""
port=8080
dir=""
sparrowd=""
haproxy_bin="haproxy"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --replicas) replicas="${2:?--replicas needs a number}"; shift 2 ;;
    --model) model="${2:?--model needs a path}"; shift 2 ;;
    --port) port="${2:?--port needs a number}"; shift 2 ;;
    --dir) dir="${2:?--dir needs a path}"; shift 2 ;;
    --sparrowd) sparrowd="${2:?--sparrowd needs a path}"; shift 2 ;;
    --haproxy) haproxy_bin="${2:?--haproxy needs a path}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "local.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done

fail() { echo "local.sh: $*" >&2; exit 2; }
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || fail "--replicas must be a positive number, not '$replicas'"
[[ "$port" =~ ^[1-9][0-9]*$ ]] && [ "$port" -le $((65535 - replicas)) ] ||
  fail "--port must leave room for $replicas replica ports below 65536, not '$port'"
[ -n "$model" ] || fail "--model is required (a GGUF file every replica serves)"
[ -f "$model" ] || fail "--model '$model' is not a file"
if [ -z "$sparrowd" ]; then
  if [ -x "$root/build/bin/sparrowd" ]; then sparrowd="$root/build/bin/sparrowd"
  else sparrowd="$(command -v sparrowd || true)"; fi
fi
[ -n "$sparrowd" ] && [ -x "$sparrowd" ] ||
  fail "no sparrowd binary: build it (deploy/build.sh) or pass --sparrowd PATH"
command -v "$haproxy_bin" >/dev/null ||
  fail "'$haproxy_bin' not found: apt-get install haproxy (or pass --haproxy PATH)"
[ -n "$dir" ] || dir="$(mktemp -d /tmp/sparrow-fleet.XXXXXX)"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

# 0 when something on PORT answers `GET PATH` over HTTP (any status).
answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3 &&
     head -c 5 <&3 | grep -q HTTP) 2>/dev/null
}

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

keyfile="$dir/admin.keys"
if [ ! -s "$keyfile" ]; then
  (umask 077 && echo "fleet $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" > "$keyfile")
fi

# The generated config: deploy/fleet/haproxy.cfg up to its server lines, then this fleet's.
cfg="$dir/haproxy.cfg"
sed '/^    # servers:/q' "$here/haproxy.cfg" > "$cfg"
for i in $(seq 1 "$replicas"); do
  echo "    server replica$i 127.0.0.1:$((port + i)) check" >> "$cfg"
done

for i in $(seq 1 "$replicas"); do
  "$sparrowd" --model "$model" --host 127.0.0.1 --port $((port + i)) --grpc-port -1 \
    --admin-key-file "$keyfile" "${extra[@]}" > "$dir/replica-$i.log" 2>&1 &
  pids+=($!)
  echo "$!" > "$dir/replica-$i.pid"
done

# Each replica answers /health once its model is loaded.
for i in $(seq 1 "$replicas"); do
  for _ in $(seq 1 600); do
    if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
      fail "replica $i exited at start; its log, $dir/replica-$i.log, ends with: $(tail -n 3 "$dir/replica-$i.log")"
    fi
    if answers $((port + i)) /health; then break; fi
    sleep 0.1
  done
done

SPARROW_FLEET_BIND="127.0.0.1:$port" "$haproxy_bin" -f "$cfg" -db > "$dir/haproxy.log" 2>&1 &
pids+=($!)
echo "$!" > "$dir/haproxy.pid"
for _ in $(seq 1 100); do
  if answers "$port" /ready; then break; fi
  kill -0 "$!" 2>/dev/null || fail "haproxy exited at start: $(tail -n 5 "$dir/haproxy.log")"
  sleep 0.1
done

echo "local.sh: $replicas replicas of $(basename "$model") behind http://127.0.0.1:$port" \
     "(replicas on $((port + 1))..$((port + replicas)); keys, config and logs in $dir)"
echo "local.sh: ready" > "$dir/ready"
# Until told to stop; a replica that dies (a test kills one) leaves the others serving.
wait
