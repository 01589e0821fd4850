#!/usr/bin/env bash
# Starts N sparrowd replicas of one model on loopback and HAProxy in front of them, configured
# by deploy/fleet/haproxy.cfg: a fleet to try on one machine. Ctrl-C (or SIGTERM) stops all.
#
#   deploy/fleet/local.sh --replicas 3 --model ../shared/models/stories260K.gguf --port 8080
#
# Clients talk to 127.0.0.1:PORT as to one sparrowd; replica i listens on HTTPS PORT+i (gRPC
# off) with the certificate DIR/sparrow.crt, which HAProxy checks, and believes HAProxy's PROXY
# headers (--trusted-proxy 127.0.0.1). Every replica takes the admin key in DIR/admin.keys, so
# `curl --cacert DIR/sparrow.crt -H "Authorization: Bearer KEY" -X POST
# https://127.0.0.1:PORT+i/admin/v1/drain` takes one out of the rotation (the admin API is not on
# the balancer's port). Logs: DIR/replica-i.log, DIR/haproxy.log.
# Flags after `--` go to every sparrowd (e.g. -- --threads 1 --max-running 4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
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

# 0 when something on PORT answers `GET PATH` over HTTP (any status); over HTTPS with a third
# argument, the CA file.
answers() {
  if [ -n "${3:-}" ]; then
    printf 'GET %s HTTP/1.0\r\n\r\n' "$2" |
      openssl s_client -quiet -verify_quiet -CAfile "$3" -connect "127.0.0.1:$1" 2>/dev/null |
      head -c 5 | grep -q HTTP
    return
  fi
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

# One certificate for every replica (they are one machine here); it is also the CA file HAProxy
# verifies them with.
if [ ! -s "$dir/sparrow.crt" ]; then "$root/deploy/make-cert.sh" "$dir" >/dev/null; fi

# The generated config: deploy/fleet/haproxy.cfg up to its server lines, then this fleet's.
cfg="$dir/haproxy.cfg"
sed '/^    # servers:/q' "$here/haproxy.cfg" > "$cfg"
for i in $(seq 1 "$replicas"); do
  echo "    server replica$i 127.0.0.1:$((port + i)) check" >> "$cfg"
done

for i in $(seq 1 "$replicas"); do
  "$sparrowd" --model "$model" --host 127.0.0.1 --port $((port + i)) --grpc-port -1 \
    --admin-key-file "$keyfile" --tls-cert "$dir/sparrow.crt" --tls-key "$dir/sparrow.key" \
    --trusted-proxy 127.0.0.1 "${extra[@]}" > "$dir/replica-$i.log" 2>&1 &
  pids+=($!)
  echo "$!" > "$dir/replica-$i.pid"
done

# Each replica answers /health once its model is loaded.
for i in $(seq 1 "$replicas"); do
  for _ in $(seq 1 600); do
    if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
      fail "replica $i exited at start; its log, $dir/replica-$i.log, ends with: $(tail -n 3 "$dir/replica-$i.log")"
    fi
    if answers $((port + i)) /health "$dir/sparrow.crt"; then break; fi
    sleep 0.1
  done
done

SPARROW_FLEET_BIND="127.0.0.1:$port" SPARROW_FLEET_CA="$dir/sparrow.crt" \
  "$haproxy_bin" -f "$cfg" -db > "$dir/haproxy.log" 2>&1 &
pids+=($!)
echo "$!" > "$dir/haproxy.pid"
for _ in $(seq 1 100); do
  if answers "$port" /ready; then break; fi
  kill -0 "$!" 2>/dev/null || fail "haproxy exited at start: $(tail -n 5 "$dir/haproxy.log")"
  sleep 0.1
done

echo "local.sh: $replicas replicas of $(basename "$model") behind http://127.0.0.1:$port" \
     "(replicas on https://127.0.0.1:$((port + 1))..$((port + replicas)); keys, certificate," \
     "config and logs in $dir)"
echo "local.sh: ready" > "$dir/ready"
# Until told to stop; a replica that dies (a test kills one) leaves the others serving.
wait
