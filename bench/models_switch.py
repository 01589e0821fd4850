#!/usr/bin/env python3
"""Models on demand: what a switch between two models costs, and what sleeping gives back.

  bench/models_switch.py --sparrowd BIN --models A.gguf B.gguf [--llama-server BIN] [--rounds 10]
                         [--sleep-model C.gguf]

Sparrow: sparrowd --models-dir over symlinks to A and B, one thread. For each round it times a
one-token greedy completion on the loaded model (warm) and one naming the other model (a
switch: load, drain, swap, then the answer), alternating. With --sleep-model it also starts
sparrowd --sleep-idle-seconds 1 on that model, measures RSS loaded (after a completion) and
asleep (/admin/v1/status says sleeping) and the first request's latency after waking.

The peer: llama-server has no models on demand in c392e509, so its way to serve the other model
is a restart: --llama-server BIN times spawn -> /health ok -> the same one-token completion on
B, ROUNDS times. A llama-server with a router (--models-dir, --models-max 1, 2025-12 and later)
is timed as Sparrow is, alternating A and B. Without --llama-server only Sparrow is measured,
and the script says so. Medians and p90 in ms.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


def call(port, method, path, body=None, timeout=120):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}


def complete(port, model):
    t0 = time.perf_counter()
    status, _ = call(port, "POST", "/v1/completions",
                     {"model": model, "prompt": "Once upon", "max_tokens": 1, "temperature": 0})
    if status != 200:
        raise SystemExit(f"completion on {model} failed: HTTP {status}")
    return (time.perf_counter() - t0) * 1000


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def start_sparrowd(binary, args):
    p = subprocess.Popen([binary, "--port", "0", "--grpc-port", "-1", "--threads", "1",
                          "--memory-pressure", "2", "--hw-profile", "none",
                          "--admin-loopback-open", "1"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        m = re.search(r"HTTP listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
    raise SystemExit("sparrowd did not start")


def stats(xs):
    xs = sorted(xs)
    return f"median {statistics.median(xs):.1f} ms, p90 {xs[int(0.9 * (len(xs) - 1))]:.1f} ms"


def link_dir(models):
    d = tempfile.mkdtemp(prefix="models-switch-")
    names = []
    for m in models:
        name = os.path.basename(m)
        os.symlink(os.path.abspath(m), os.path.join(d, name))
        names.append(name[:-5] if name.endswith(".gguf") else name)
    return d, names


def bench_sparrow(args):
    d, (a, b) = link_dir(args.models)
    p, port = start_sparrowd(args.sparrowd, ["--models-dir", d, "--model", a + ".gguf"])
    try:
        warm, switch = [], []
        complete(port, a)
        current, other = a, b
        for _ in range(args.rounds):
            warm.append(complete(port, current))
            switch.append(complete(port, other))
            current, other = other, current
        print(f"sparrowd warm request (1 token, loaded model): {stats(warm)}")
        print(f"sparrowd request naming the other model (switch + 1 token): {stats(switch)}")
    finally:
        p.terminate()
        p.wait()
    if not args.sleep_model:
        return
    d, (c,) = link_dir([args.sleep_model])
    p, port = start_sparrowd(args.sparrowd, ["--models-dir", d, "--model", c + ".gguf",
                                             "--sleep-idle-seconds", "1"])
    try:
        loaded, asleep, wake = [], [], []
        for _ in range(min(args.rounds, 5)):
            complete(port, c)
            loaded.append(rss(p.pid))
            while call(port, "GET", "/admin/v1/status")[1]["model"].get("state") != "sleeping":
                time.sleep(0.05)
            asleep.append(rss(p.pid))
            wake.append(complete(port, c))
        mib = lambda xs: statistics.median(xs) / 2**20
        print(f"sparrowd RSS with {c} loaded {mib(loaded):.1f} MiB, asleep {mib(asleep):.1f} MiB "
              f"(median of {len(loaded)})")
        print(f"sparrowd first request after sleeping (load + 1 token): {stats(wake)}")
    finally:
        p.terminate()
        p.wait()


def bench_llama_server(args):
    binary = args.llama_server
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    port = 18931
    if "--models-dir" in help_text:
        d, (a, b) = link_dir(args.models)
        p = subprocess.Popen([binary, "--models-dir", d, "--models-max", "1", "--port", str(port),
                              "-t", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while call(port, "GET", "/health")[0] != 200:
                time.sleep(0.05)
            switch = []
            complete(port, a)
            current, other = a, b
            for _ in range(args.rounds):
                switch.append(complete(port, other))
                current, other = other, current
            print(f"llama-server router, request naming the other model: {stats(switch)}")
        finally:
            p.terminate()
            p.wait()
        return
    restart = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        p = subprocess.Popen([binary, "-m", args.models[1], "--port", str(port), "-t", "1",
                              "-c", "256"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                try:
                    if call(port, "GET", "/health", timeout=5)[0] == 200:
                        break
                except (urllib.error.URLError, ConnectionError):
                    pass
                time.sleep(0.01)
            status, _ = call(port, "POST", "/v1/completions",
                             {"prompt": "Once upon", "max_tokens": 1, "temperature": 0})
            if status != 200:
                raise SystemExit(f"llama-server completion failed: HTTP {status}")
            restart.append((time.perf_counter() - t0) * 1000)
        finally:
            p.terminate()
            p.wait()
    print(f"llama-server restart on the other model (no router: spawn + load + 1 token): "
          f"{stats(restart)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sparrowd", required=True)
    ap.add_argument("--models", nargs=2, required=True)
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER", ""))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--sleep-model", default="")
    args = ap.parse_args()
    bench_sparrow(args)
    if not args.llama_server:
        print("no peer measured: give --llama-server BIN (or LLAMA_SERVER) for llama.cpp's figure")
        return
    bench_llama_server(args)


if __name__ == "__main__":
    main()
