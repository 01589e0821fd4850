#!/usr/bin/env bash
# The Debian packages as a user gets them: built by deploy/package.sh from this build, installed
# with dpkg -i, sparrowd started as the service would (its user, its config, its state directory)
# and asked /health and a completion over HTTP; then purged, also when a step fails.
#   package_test.sh SOURCE_DIR BUILD_DIR MODEL
# Root only (dpkg -i): otherwise exits 77, which ctest reports as skipped.
set -euo pipefail
SOURCE_DIR="$1" BUILD_DIR="$2" MODEL="$3"
PACKAGES=(sparrowd sparrow sparrowctl)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: installing Debian packages needs root (dpkg -i); run ctest -L package as root"
  exit 77
fi
for p in "${PACKAGES[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    echo "SKIP: package $p is already installed on this machine; the test would replace it"
    exit 77
  fi
done

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID"; fi
  dpkg --purge "${PACKAGES[@]}" >"$WORK/purge.log" 2>&1 || cat "$WORK/purge.log" >&2
  rm -rf "$WORK"
}
trap cleanup EXIT

# One HTTP/1.1 exchange over bash's /dev/tcp; prints the whole reply.
http() {
  local method="$1" path="$2" body="${3:-}"
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "$method" "$path" "${#body}" "$body" >&3
  cat <&3
  exec 3<&-
}

echo "== packages"
"$SOURCE_DIR/deploy/package.sh" --build-dir "$BUILD_DIR" --output "$WORK/debs" --no-build
ARCH="$(dpkg --print-architecture)"
for p in "${PACKAGES[@]}"; do
  deb="$(ls "$WORK/debs/${p}_"*"_$ARCH.deb" 2>/dev/null)" || fail "no $p package for $ARCH in $WORK/debs"
  depends="$(dpkg-deb -f "$deb" Depends)"
  # dpkg-shlibdeps found the shared libraries each program needs.
  [[ "$depends" == *libc6* ]] || fail "$p: Depends lacks libc6 (dpkg-shlibdeps): '$depends'"
done
dpkg-deb -e "$WORK/debs/sparrowd_"*.deb "$WORK/control"
grep -qx /etc/sparrow/sparrow.yaml "$WORK/control/conffiles" ||
  fail "/etc/sparrow/sparrow.yaml is not a conffile"

echo "== install"
dpkg -i "$WORK"/debs/*.deb
for f in /usr/bin/sparrowd /usr/bin/sparrow /usr/bin/sparrowctl \
  /lib/systemd/system/sparrowd.service /etc/sparrow/sparrow.yaml /usr/lib/sysusers.d/sparrow.conf; do
  [ -f "$f" ] || fail "$f was not installed"
done
getent passwd sparrow >/dev/null || fail "postinst made no 'sparrow' user"
[ "$(stat -c %U /var/lib/sparrow)" = sparrow ] || fail "/var/lib/sparrow is not the sparrow user's"
# The config may hold admin_key: root:sparrow 0640. The models directory is root's.
[ "$(stat -c '%U:%G %a' /etc/sparrow/sparrow.yaml)" = "root:sparrow 640" ] ||
  fail "/etc/sparrow/sparrow.yaml is $(stat -c '%U:%G %a' /etc/sparrow/sparrow.yaml), not root:sparrow 640"
[ "$(stat -c '%U:%G %a' /var/lib/sparrow/models)" = "root:sparrow 750" ] ||
  fail "/var/lib/sparrow/models is $(stat -c '%U:%G %a' /var/lib/sparrow/models), not root:sparrow 750"
for b in sparrowd sparrow sparrowctl; do
  # Nothing from the build tree at run time: no RPATH into it, every library found.
  if readelf -d "/usr/bin/$b" | grep -qE 'RPATH|RUNPATH'; then fail "/usr/bin/$b has an RPATH"; fi
  if ldd "/usr/bin/$b" | grep -q "not found"; then fail "/usr/bin/$b: $(ldd "/usr/bin/$b")"; fi
done
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify /lib/systemd/system/sparrowd.service
fi
/usr/bin/sparrow --help >/dev/null || fail "the installed sparrow does not run"
/usr/bin/sparrowctl --help >/dev/null || fail "the installed sparrowctl does not run"

echo "== serve"
# The installed config names /var/lib/sparrow/models/model.gguf: the model goes there, as a user
# would put it. The flags only move the ports off the defaults (the machine may be serving on
# them) and keep the machine's memory pressure out of the test.
MODEL_PATH="$(sed -n 's/^model: *\([^ ]*\).*/\1/p' /etc/sparrow/sparrow.yaml)"
[ "$MODEL_PATH" = /var/lib/sparrow/models/model.gguf ] || fail "config names model '$MODEL_PATH'"
install -o root -g sparrow -m 0640 "$MODEL" "$MODEL_PATH"
# The service reads its config and model and can change neither.
for f in /etc/sparrow/sparrow.yaml "$MODEL_PATH"; do
  setpriv --reuid=sparrow --regid=sparrow --init-groups test -r "$f" || fail "sparrow cannot read $f"
  if setpriv --reuid=sparrow --regid=sparrow --init-groups test -w "$f"; then
    fail "sparrow can write $f"
  fi
done
if setpriv --reuid=sparrow --regid=sparrow --init-groups touch /var/lib/sparrow/models/new.gguf 2>/dev/null; then
  fail "sparrow can add files to /var/lib/sparrow/models"
fi
if command -v systemd-analyze >/dev/null 2>&1; then
  # The unit's sandbox, scored as deploy/README.md says (below 5.0 is systemd's "OK" or better).
  score="$(systemd-analyze security --offline=yes /lib/systemd/system/sparrowd.service | sed -n 's/.*exposure level for sparrowd.service: \([0-9.]*\).*/\1/p')"
  echo "systemd-analyze security: $score"
  awk -v s="$score" 'BEGIN { exit !(s != "" && s < 5.0) }' || fail "exposure $score is not OK or better"
fi
LOG="$WORK/sparrowd.log"
# MemoryDenyWriteExecute=yes: the kernel's own form of it (prctl PR_SET_MDWE, Linux 6.3+, kept
# across exec) where python3 can set it, so a JIT or an executable stack would fail here.
MDWE=()
if command -v python3 >/dev/null 2>&1; then
  MDWE=(python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0: print("MDWE unavailable:", os.strerror(ctypes.get_errno()), file=sys.stderr)
else: print("sparrowd runs with MDWE (refuse exec gain)", file=sys.stderr)
os.execv(sys.argv[1], sys.argv[1:])')
fi
(cd /var/lib/sparrow && exec env -i PATH=/usr/bin:/bin HOME=/var/lib/sparrow \
  XDG_CACHE_HOME=/var/lib/sparrow/cache setpriv --reuid=sparrow --regid=sparrow --init-groups \
  "${MDWE[@]}" /usr/bin/sparrowd --config /etc/sparrow/sparrow.yaml --port 0 --grpc-port 0 \
  --memory-pressure 2) >"$LOG" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 600); do
  PORT="$(sed -n 's|.*HTTP listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$LOG")"
  [ -n "$PORT" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "sparrowd exited: $(cat "$LOG")"
  sleep 0.1
done
[ -n "$PORT" ] || fail "sparrowd did not listen within a minute: $(cat "$LOG")"
grep -q "from $MODEL_PATH" "$LOG" || fail "sparrowd did not serve $MODEL_PATH: $(cat "$LOG")"

health="$(http GET /health)"
[[ "$health" == "HTTP/1.1 200"* ]] || fail "/health: $health"
completion="$(http POST /v1/completions '{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}')"
[[ "$completion" == "HTTP/1.1 200"* ]] || fail "/v1/completions: $completion"
[[ "$completion" == *'"text":'* ]] || fail "/v1/completions has no text: $completion"

kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || fail "sparrowd did not exit 0 on SIGTERM: $(cat "$LOG")"
SERVER_PID=""

echo "== purge"
dpkg --purge "${PACKAGES[@]}"
for f in /usr/bin/sparrowd /usr/bin/sparrow /usr/bin/sparrowctl /etc/sparrow /var/lib/sparrow; do
  [ ! -e "$f" ] || fail "$f is still there after the purge"
done
echo "PASS"
