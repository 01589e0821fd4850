#!/usr/bin/env bash
# One model over several devices on a LAN, simulated on one machine: each device is a network
# namespace joined to the coordinator's by a veth pair shaped by tbf to MBIT Mbit/s each way, with
# its own cgroup v1 memory limit and CPU. Sparrow (sparrowd --worker / --workers) against
# llama.cpp's RPC backend (rpc-server on every device, llama-bench --rpc -ngl 99 on the first) on
# the same devices and model. Prints decode and prefill tokens/s, medians of R runs, and ratios.
#
#   SPARROWD=build/bin/sparrowd LLAMA_BIN=/path/to/llama.cpp/build-rpc/bin MODEL=model.gguf \
#   DEVICES=3 MBIT=300 LIMIT_MIB=1536 bench/shard.sh
#
# SPLITS="layers tensor" measures Sparrow twice, as a pipeline of whole layers and with every
# layer cut over the devices (--shard-split tensor), against the same llama.cpp run.
#
# CLIENTS=8: throughput instead (EdgeShard's claim): CLIENTS requests at once, each P prompt tokens
# and N generated, against Sparrow on the first device alone, then across all devices with the
# batch going whole from device to device (micro-batches 1), then pipelined (one micro-batch per
# device); prints generated tokens/s over the wall time, medians of R rounds, and ratios.
# llama.cpp is not run in this mode.
#
# Every request has a prompt of its own (no prefix cache hits). Sparrow's figures come from its
# request log: decode = (completion tokens - 1) / (total - time to
# first token), prefill = prompt tokens / time to first token (which includes one decode step);
# llama-bench's are its own pp and tg. Needs root (namespaces, tc, cgroup v1); everything made is
# removed at exit.
set -euo pipefail
: "${SPARROWD:?set SPARROWD to the sparrowd binary}"
: "${LLAMA_BIN:?set LLAMA_BIN to a llama.cpp bin directory with rpc-server and llama-bench}"
: "${MODEL:?set MODEL to a GGUF file}"
DEVICES=${DEVICES:-3}
MBIT=${MBIT:-300}
LIMIT_MIB=${LIMIT_MIB:-1536}
N=${N:-16}       # tokens generated per run
P=${P:-64}       # prompt tokens per run
R=${R:-3}        # runs (medians)
THREADS=${THREADS:-1}
PIN=${PIN:-1}  # 1: device i runs on CPU i mod nproc; 0: every device may use every CPU
SHARD_LAYERS=${SHARD_LAYERS:-}  # "" = sparrowd places the layers
SKIP_LLAMA=${SKIP_LLAMA:-0}
CLIENTS=${CLIENTS:-1}
EXTRA=${EXTRA:-}  # more coordinator flags, e.g. "--shard-micro-batches 1"
SPLITS=${SPLITS:-layers}  # "layers tensor": the pipeline and Galaxy's tensor split, one after the other
OUT=${OUT:-/tmp/sparrow-shard-bench}
KEY=shard-bench-admin-key-0123456789
CG=/sys/fs/cgroup/memory
NCPU=$(nproc)

if [ ! -w "$CG" ] || ! command -v tc >/dev/null || ! command -v ip >/dev/null; then
  echo "shard.sh: needs root, iproute2 (ip, tc) and a cgroup v1 memory controller at $CG; skipped" >&2
  exit 3
fi
mkdir -p "$OUT"

cleanup() {
  set +e
  for i in $(seq 0 $((DEVICES - 1))); do
    if [ -f "$CG/sparrow-shard-$i/cgroup.procs" ]; then
      while read -r pid; do kill -9 "$pid" 2>/dev/null; done <"$CG/sparrow-shard-$i/cgroup.procs"
    fi
  done
  sleep 0.5
  for i in $(seq 0 $((DEVICES - 1))); do
    ip netns del "sb$i" 2>/dev/null
    rmdir "$CG/sparrow-shard-$i" 2>/dev/null
  done
}
trap cleanup EXIT
cleanup

# Device i: namespace sb$i; worker i (>= 1) is 10.77.i.2, the coordinator reaches it from 10.77.i.1.
for i in $(seq 0 $((DEVICES - 1))); do
  ip netns add "sb$i"
  ip -n "sb$i" link set lo up
  mkdir "$CG/sparrow-shard-$i"
  echo $((LIMIT_MIB * 1024 * 1024)) >"$CG/sparrow-shard-$i/memory.limit_in_bytes"
  if [ "$i" -gt 0 ]; then
    ip link add "vc$i" netns sb0 type veth peer name "vw$i" netns "sb$i"
    ip -n sb0 addr add "10.77.$i.1/24" dev "vc$i"
    ip -n "sb$i" addr add "10.77.$i.2/24" dev "vw$i"
    ip -n sb0 link set "vc$i" up
    ip -n "sb$i" link set "vw$i" up
    ip netns exec sb0 tc qdisc add dev "vc$i" root tbf rate "${MBIT}mbit" burst 128kb latency 100ms
    ip netns exec "sb$i" tc qdisc add dev "vw$i" root tbf rate "${MBIT}mbit" burst 128kb latency 100ms
  fi
done

# Runs a command on device $1: in its namespace, its cgroup and its CPUs. `ip netns exec` mounts a
# fresh /sys without the cgroup file systems, so the memory controller is mounted again inside
# (the same hierarchy): the process sees its own limit, as on a real device.
run_in() {
  local i=$1
  shift
  ip netns exec "sb$i" bash -c '
    mount -t tmpfs cgroups /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/memory &&
      mount -t cgroup -o memory memory /sys/fs/cgroup/memory || exit 97
    echo $$ >"/sys/fs/cgroup/memory/$0/cgroup.procs"
    exec taskset -c "$1" "${@:2}"' "sparrow-shard-$i" "$(cpus_of "$i")" "$@"
}

cpus_of() {
  if [ "$PIN" = 1 ]; then echo $(($1 % NCPU)); else echo "0-$((NCPU - 1))"; fi
}

wait_for() {  # file pattern seconds
  for _ in $(seq 1 $((10 * $3))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "shard.sh: '$2' never appeared in $1:" >&2
  tail -20 "$1" >&2
  return 1
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

peak_mib() { echo $(($(cat "$CG/sparrow-shard-$1/memory.max_usage_in_bytes") / 1048576)); }

# --- Sparrow ---
workers=""
for i in $(seq 1 $((DEVICES - 1))); do workers="${workers:+$workers,}10.77.$i.2:50061"; done
layers_arg=()
[ -n "$SHARD_LAYERS" ] && layers_arg=(--shard-layers "$SHARD_LAYERS")

start_sparrow() {  # extra coordinator flags...; with "--workers" among them, the workers start first
  sync
  echo 3 >/proc/sys/vm/drop_caches
  if [[ " $* " == *" --workers "* ]]; then
    for i in $(seq 1 $((DEVICES - 1))); do
      run_in "$i" "$SPARROWD" --worker --model "$MODEL" --host "10.77.$i.2" --grpc-port 50061 \
        --admin-key "$KEY" --threads "$THREADS" --allow-insecure >"$OUT/sparrow-worker-$i.log" 2>&1 &
    done
    for i in $(seq 1 $((DEVICES - 1))); do
      wait_for "$OUT/sparrow-worker-$i.log" "worker listening" 120 || exit 1
    done
  fi
  run_in 0 "$SPARROWD" --model "$MODEL" --host 127.0.0.1 --port 8080 --grpc-port -1 \
    --admin-key "$KEY" --threads "$THREADS" --n-ctx 256 --max-running "$((CLIENTS > 2 ? CLIENTS : 2))" \
    --kv-blocks "$((32 * (CLIENTS > 2 ? CLIENTS : 2)))" --memory-pressure 0 --hw-profile none $EXTRA "$@" \
    >"$OUT/sparrow-coordinator.log" 2>&1 &
  wait_for "$OUT/sparrow-coordinator.log" "HTTP listening" 600 || exit 1
  grep -A"$DEVICES" "layers placed" "$OUT/sparrow-coordinator.log" | sed 's/^/  /' || true
}

stop_sparrow() {
  for i in $(seq 0 $((DEVICES - 1))); do
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$CG/sparrow-shard-$i/cgroup.procs"
  done
  sleep 1
}

prompt_of() {  # a number: each run and client gets its own prompt, so that no prefix is cached
  python3 -c "print([1] + [100 + ($1 * 7919 + i * 37) % 20000 for i in range($P - 1)])"
}

complete() {  # client number, reply file
  ip netns exec sb0 curl -s http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \
    -d "{\"prompt\": $(prompt_of "$1"), \"max_tokens\": $N, \"temperature\": 0, \"logit_bias\": {\"2\": -100}}" \
    >"$2"
}

if [ "$CLIENTS" -gt 1 ]; then
  # Generated tokens/s of CLIENTS requests at once, median of R rounds after a warm-up round.
  throughput() {
    local rates=""
    for r in $(seq 0 "$R"); do
      local t0 t1
      t0=$(date +%s.%N)
      local pids=()
      for c in $(seq 1 "$CLIENTS"); do
        complete "$((r * 1000 + c))" "$OUT/sparrow-reply-$c.json" &
        pids+=($!)
      done
      wait "${pids[@]}"
      t1=$(date +%s.%N)
      local made
      made=$(python3 -c "import json, sys
print(sum(json.load(open(f))['usage']['completion_tokens'] for f in sys.argv[1:]))" \
        $(seq -f "$OUT/sparrow-reply-%g.json" 1 "$CLIENTS"))
      [ "$r" -gt 0 ] && rates="$rates $(python3 -c "print($made / ($t1 - $t0))")"
    done
    echo "$rates" | tr ' ' '\n' | grep . | median
  }
  start_sparrow
  alone=$(throughput)
  stop_sparrow
  start_sparrow --workers "$workers" "${layers_arg[@]}" --shard-micro-batches 1
  whole=$(throughput)
  stop_sparrow
  start_sparrow --workers "$workers" "${layers_arg[@]}"
  piped=$(throughput)
  stop_sparrow
  echo "sparrow, $CLIENTS clients, generated tok/s: one device $alone, $DEVICES devices $whole" \
    "(batch whole), $piped (pipelined)"
  python3 -c "print(f'against one device: batch whole {$whole / $alone:.2f}x, pipelined {$piped / $alone:.2f}x')"
  exit 0
fi

# One Sparrow run per split (SPLITS="layers tensor": the pipeline, then Galaxy's tensor split).
declare -A s_tg s_pp
for split in $SPLITS; do
  if [ "$DEVICES" -gt 1 ]; then
    start_sparrow --workers "$workers" "${layers_arg[@]}" --shard-split "$split"
  else
    start_sparrow
  fi
  for r in $(seq 0 "$R"); do  # run 0 warms the pages
    complete "$r" "$OUT/sparrow-reply-$r.json"
  done
  grep 'POST /v1/completions 200' "$OUT/sparrow-coordinator.log" | tail -n "$R" |
    sed -E 's/.* 200 ([0-9.]+)ms .*prompt_tokens=([0-9]+).*completion_tokens=([0-9]+) ttft=([0-9.]+)ms.*/\1 \2 \3 \4/' \
      >"$OUT/sparrow-times.txt"
  if grep 'POST /v1/completions 200' "$OUT/sparrow-coordinator.log" | tail -n "$R" | grep -q 'cached_tokens=[1-9]'; then
    echo "shard.sh: a measured request found its prompt in the prefix cache; its prefill is not" >&2
  fi
  s_tg[$split]=$(awk '{print ($3 - 1) / (($1 - $4) / 1000)}' "$OUT/sparrow-times.txt" | median)
  s_pp[$split]=$(awk '{print $2 / ($4 / 1000)}' "$OUT/sparrow-times.txt" | median)
  s_peaks=""
  for i in $(seq 0 $((DEVICES - 1))); do s_peaks="$s_peaks $(peak_mib "$i")"; done
  stop_sparrow
  echo "sparrow ($split): decode ${s_tg[$split]} tok/s, prefill ${s_pp[$split]} tok/s, peak MiB per device:$s_peaks"
  for i in $(seq 0 $((DEVICES - 1))); do echo 0 >"$CG/sparrow-shard-$i/memory.max_usage_in_bytes"; done
done

if [ "$SKIP_LLAMA" = 1 ]; then exit 0; fi

# --- llama.cpp RPC: an rpc-server on every device, llama-bench on the first ---
sync
echo 3 >/proc/sys/vm/drop_caches
for i in $(seq 0 $((DEVICES - 1))); do
  echo 0 >"$CG/sparrow-shard-$i/memory.max_usage_in_bytes"
done
rpc="127.0.0.1:50052"
run_in 0 "$LLAMA_BIN/rpc-server" -H 127.0.0.1 -p 50052 >"$OUT/llama-rpc-0.log" 2>&1 &
for i in $(seq 1 $((DEVICES - 1))); do
  run_in "$i" "$LLAMA_BIN/rpc-server" -H "10.77.$i.2" -p 50052 >"$OUT/llama-rpc-$i.log" 2>&1 &
  rpc="$rpc,10.77.$i.2:50052"
done
sleep 2
run_in 0 "$LLAMA_BIN/llama-bench" -m "$MODEL" --rpc "$rpc" -ngl 99 -p "$P" -n "$N" -r "$R" \
  -t "$THREADS" -o json >"$OUT/llama-bench.json" 2>"$OUT/llama-bench.err" || {
  echo "llama-bench failed:" >&2
  tail -20 "$OUT/llama-bench.err" >&2
  exit 1
}
l_pp=$(python3 -c "import json; print([t['avg_ts'] for t in json.load(open('$OUT/llama-bench.json')) if t['n_prompt'] > 0][0])")
l_tg=$(python3 -c "import json; print([t['avg_ts'] for t in json.load(open('$OUT/llama-bench.json')) if t['n_gen'] > 0][0])")
l_peaks=""
for i in $(seq 0 $((DEVICES - 1))); do l_peaks="$l_peaks $(peak_mib "$i")"; done
echo "llama.cpp rpc: decode $l_tg tok/s, prefill $l_pp tok/s, peak MiB per device:$l_peaks"
for split in $SPLITS; do
  python3 -c "print(f'sparrow ($split) / llama.cpp rpc: decode {${s_tg[$split]} / $l_tg:.2f}x, prefill {${s_pp[$split]} / $l_pp:.2f}x')"
done
