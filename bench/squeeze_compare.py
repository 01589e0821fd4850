#!/usr/bin/env python3
"""Squeeze and release: a server inside a cgroup v1 memory limit serves a steady load while a
memory hog in the same cgroup takes memory and later gives it back. Run once for sparrowd and
once for llama-server with the same limit, load and hog; every SAMPLE_S the server's RSS, the
cgroup's usage, sparrowd's memory budget and the tokens completed are recorded. Writes
OUT-sparrowd.csv, OUT-llama.csv, a summary (stdout) and, with gnuplot, OUT.png.

  bench/squeeze_compare.py --sparrowd BIN --sparrow-model F.sparrow.gguf --cache-mb N \
      [--llama-server BIN --llama-model F.gguf] --limit-mib L --hog-mib H [--out PREFIX]

Without --llama-server only sparrowd runs (a squeeze of one server, e.g. a MoE file whose
experts are on flash).

Needs root and the v1 memory controller at /sys/fs/cgroup/memory (exits 3 with a message
otherwise). The page cache is dropped before each run. Both servers get the same thread count
and context; llama-server maps its model (its default), sparrowd reads the FFN from flash.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = "/sys/fs/cgroup/memory"


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def rss_mib(pid):
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def post(port, body, timeout):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(port, path, timeout=2):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


class Load:
    """STREAMS clients each asking for completions back to back; records (end time, tokens)."""

    def __init__(self, port, streams, tokens):
        self.port, self.done, self.failed, self.incomplete = port, [], 0, 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i, tokens), daemon=True)
                        for i in range(streams)]

    def run(self, i, tokens):
        n = 0
        while not self.stop.is_set():
            body = {"prompt": f"Story {i}.{n}: once upon a time", "max_tokens": tokens,
                    "temperature": 0}
            n += 1
            try:
                out = post(self.port, body, 300)
                got = out.get("usage", {}).get("completion_tokens", tokens)
                finish = (out.get("choices") or [{}])[0].get("finish_reason")
                with self.lock:
                    self.done.append((time.time(), got))
                    # Answered, but not to the end (an error mid-way): counted apart.
                    self.incomplete += finish not in ("length", "stop")
            except Exception:  # refused (503), killed or timed out: counted, and a pause
                with self.lock:
                    self.failed += 1
                time.sleep(0.5)

    def tokens_since(self, t0):
        with self.lock:
            return sum(n for t, n in self.done if t >= t0)


def run_one(name, cmd, port, args, cg):
    """One server under the limit; returns rows of samples and a summary dict."""
    os.mkdir(cg)
    try:
        with open(f"{cg}/memory.limit_in_bytes", "w") as f:
            f.write(str(args.limit_mib << 20))
        subprocess.run(["sync"], check=False)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        log = open(f"{args.out}-{name}.log", "w")
        server = subprocess.Popen(["bash", "-c", 'echo $$ > "$0/cgroup.procs"; exec "$@"', cg] +
                                  cmd, stdout=log, stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                get(port, "/health")
                break
            except Exception:
                if server.poll() is not None:
                    raise SystemExit(f"{name} exited while starting; see {args.out}-{name}.log")
                time.sleep(0.5)
        load = Load(port, args.streams, args.tokens)
        for t in load.threads:
            t.start()
        t0 = time.time()
        rows, hog = [], None
        while time.time() - t0 < args.seconds:
            now = time.time() - t0
            if hog is None and now >= args.hog_at:
                hog = subprocess.Popen([
                    "bash", "-c", 'echo $$ > "$0/cgroup.procs"; exec python3 -c "$1"', cg,
                    "import time\nx=[]\n"
                    f"for i in range({args.hog_mib // 10}):\n"
                    "  x.append(b'\\x01' * (10 << 20)); time.sleep(0.1)\n"
                    f"time.sleep({args.hog_hold})\n"])
            budget = cache = None
            if name == "sparrowd" and server.poll() is None:
                try:
                    m = get(port, "/metrics")
                    budget = metric(m, 'sparrow_memory_budget_bytes{consumer="total"}')
                    cache = metric(m, 'sparrow_memory_budget_bytes{consumer="neuron_cache"}')
                except Exception:
                    pass
            window = load.tokens_since(time.time() - args.window) / args.window
            rows.append({
                "t": round(now, 2),
                "rss_mib": round(rss_mib(server.pid), 1) if server.poll() is None else 0,
                "cgroup_mib": round(int(read(f"{cg}/memory.usage_in_bytes", "0")) / 1048576, 1),
                "budget_mib": round(budget / 1048576, 1) if budget is not None else "",
                "cache_budget_mib": round(cache / 1048576, 1) if cache is not None else "",
                "tok_s": round(window, 2),
                "alive": int(server.poll() is None),
            })
            time.sleep(args.sample_s)
        load.stop.set()
        oom = 0
        for line in read(f"{cg}/memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                oom = int(line.split()[1])
        alive = server.poll() is None

        def rate(a, b):
            toks = [n for t, n in load.done if t0 + a <= t < t0 + b]
            return sum(toks) / (b - a)

        summary = {
            "server": name, "oom_kills": oom, "alive_at_end": alive, "failed_requests":
            load.failed, "incomplete_requests": load.incomplete, "completed_requests": len(load.done), "tok_s_before": round(rate(5, args.hog_at), 2),
            "tok_s_squeezed": round(rate(args.hog_at + args.hog_mib / 100 + 5,
                                         args.hog_at + args.hog_mib / 100 + args.hog_hold), 2),
            "tok_s_after": round(rate(args.hog_at + args.hog_mib / 100 + args.hog_hold + 5,
                                      args.seconds), 2),
            "peak_cgroup_mib": round(int(read(f"{cg}/memory.max_usage_in_bytes", "0")) / 1048576,
                                     1),
        }
        return rows, summary
    finally:
        for pid in read(f"{cg}/cgroup.procs").split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)
        try:
            os.rmdir(cg)
        except OSError:
            pass


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sparrowd", required=True)
    p.add_argument("--sparrow-model", required=True)
    p.add_argument("--cache-mb", type=int, required=True)
    p.add_argument("--llama-server", default="", help="omit to squeeze sparrowd alone")
    p.add_argument("--llama-model", default="")
    p.add_argument("--limit-mib", type=int, required=True)
    p.add_argument("--hog-mib", type=int, required=True)
    p.add_argument("--hog-at", type=float, default=20, help="seconds into the run")
    p.add_argument("--hog-hold", type=float, default=40, help="seconds it holds its memory")
    p.add_argument("--seconds", type=float, default=100)
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=1024,
                   help="context per stream; 0: sparrowd chooses it from the limit (no --n-ctx)")
    p.add_argument("--sample-s", type=float, default=0.5)
    p.add_argument("--window", type=float, default=10, help="seconds of the tok/s window")
    p.add_argument("--out", default="squeeze")
    args = p.parse_args()
    if not os.access(ROOT, os.W_OK) or not os.path.exists(f"{ROOT}/memory.limit_in_bytes"):
        print(f"squeeze_compare: no writable cgroup v1 memory controller at {ROOT}; skipped",
              file=sys.stderr)
        sys.exit(3)
    port = 18431
    runs = {
        "sparrowd": [args.sparrowd, "--model", args.sparrow_model, "--port", str(port),
                     "--grpc-port", "-1", "--threads", str(args.threads), "--cache-mb",
                     str(args.cache_mb), "--max-running", str(args.streams)] +
                    (["--n-ctx", str(args.ctx)] if args.ctx > 0 else []),
        "llama": [args.llama_server, "-m", args.llama_model, "--port", str(port + 1), "-t",
                  str(args.threads), "-c", str(args.ctx * args.streams), "-np",
                  str(args.streams)],
    }
    if not args.llama_server:
        del runs["llama"]
    elif not args.llama_model:
        raise SystemExit("squeeze_compare: --llama-server needs --llama-model")
    elif args.ctx <= 0:
        raise SystemExit("squeeze_compare: --llama-server needs --ctx N (llama-server would "
                         "take the training context)")
    summaries = []
    # Each server on its own port: a killed one may hold its socket for a moment.
    for i, (name, cmd) in enumerate(runs.items()):
        rows, summary = run_one(name, cmd, port + i, args, f"{ROOT}/sparrow-squeeze-{os.getpid()}")
        with open(f"{args.out}-{name}.csv", "w") as f:
            f.write(",".join(rows[0].keys()) + "\n")
            for r in rows:
                f.write(",".join(str(v) for v in r.values()) + "\n")
        summaries.append(summary)
        print(json.dumps(summary))
    llama_rss = llama_tok = ""
    if "llama" in runs:
        llama_rss = f", '{args.out}-llama.csv' using 1:2 with lines lw 2 title 'llama-server RSS'"
        llama_tok = f", '{args.out}-llama.csv' using 1:6 with lines lw 2 title 'llama-server'"
    if shutil.which("gnuplot"):
        script = f"""
set terminal pngcairo size 1000,700
set output '{args.out}.png'
set datafile separator ','
set key autotitle columnhead
set multiplot layout 2,1 title 'limit {args.limit_mib} MiB, hog {args.hog_mib} MiB from t={args.hog_at:g} s for {args.hog_hold:g} s'
set ylabel 'MiB'
plot '{args.out}-sparrowd.csv' using 1:2 with lines lw 2 title 'sparrowd RSS', \
     '' using 1:4 with lines dt 2 title 'sparrowd budget'{llama_rss}
set ylabel 'tokens/s ({args.window:g} s window)'
set xlabel 'seconds'
plot '{args.out}-sparrowd.csv' using 1:6 with lines lw 2 title 'sparrowd'{llama_tok}
unset multiplot
"""
        subprocess.run(["gnuplot"], input=script.encode(), check=False)
        print(f"plot: {args.out}.png")


if __name__ == "__main__":
    main()
