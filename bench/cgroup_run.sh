#!/usr/bin/env bash
# Runs one command inside a cgroup v1 memory limit and reports what the cgroup saw:
#   bench/cgroup_run.sh LIMIT_MIB OUT_PREFIX -- COMMAND [ARGS...]
# The page cache is dropped first (so that no engine starts with the model already cached), the
# command's stdout/stderr go to OUT_PREFIX.out / OUT_PREFIX.err, and one line of key=value is
# printed: limit, peak usage (memory.max_usage_in_bytes: resident memory plus the page cache the
# command touched, which is what the limit holds back), OOM kills, exit status and wall seconds.
# Needs root and the v1 memory controller at /sys/fs/cgroup/memory (a clear message otherwise).
set -euo pipefail
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: $0 LIMIT_MIB OUT_PREFIX -- COMMAND [ARGS...]" >&2
  exit 2
fi
limit_mib=$1
out=$2
shift 3
root=/sys/fs/cgroup/memory
if [ ! -w "$root" ] || [ ! -f "$root/memory.limit_in_bytes" ]; then
  echo "cgroup_run: no writable cgroup v1 memory controller at $root (needs root); skipped" >&2
  exit 3
fi
cg="$root/sparrow-bench-$$"
mkdir "$cg"
cleanup() {
  # Whatever is left in the group is ended before the group goes.
  if [ -f "$cg/cgroup.procs" ]; then
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$cg/cgroup.procs"
    sleep 0.2
    rmdir "$cg" 2>/dev/null || true
  fi
}
trap cleanup EXIT
echo $((limit_mib * 1024 * 1024)) >"$cg/memory.limit_in_bytes"
# Without swap the limit is the limit; where memsw exists keep swap out of it too.
if [ -f "$cg/memory.memsw.limit_in_bytes" ]; then
  echo $((limit_mib * 1024 * 1024)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
fi
sync
echo 3 >/proc/sys/vm/drop_caches
start=$(date +%s.%N)
set +e
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@" >"$out.out" 2>"$out.err"
status=$?
set -e
end=$(date +%s.%N)
peak=$(cat "$cg/memory.max_usage_in_bytes")
oom_kills=$(awk '/oom_kill /{print $2}' "$cg/memory.oom_control")
failcnt=$(cat "$cg/memory.failcnt")
awk -v l="$limit_mib" -v p="$peak" -v o="${oom_kills:-0}" -v f="$failcnt" -v s="$status" \
  -v t0="$start" -v t1="$end" 'BEGIN {
    printf "limit_mib=%s peak_mib=%.1f oom_kills=%s limit_hits=%s exit=%s seconds=%.2f\n",
           l, p / 1048576, o, f, s, t1 - t0 }'
