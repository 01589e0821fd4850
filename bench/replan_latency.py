#!/usr/bin/env python3
"""Re-plan latency: how long a budget change takes to be applied while sparrowd serves.

  bench/replan_latency.py --sparrowd BIN --model F.gguf [--cache-mb N] [--changes 20] [--low 0.7]

Starts sparrowd on MODEL with an admin key (and --memory-pressure 2, so that only the operator
moves the budget), keeps STREAMS completions running back to back, and moves the budget through
the admin API CHANGES times, alternating between a low budget and the ceiling. The low budget is
the floor (the KV pool at one context, the neuron cache empty: every active neuron then comes
from flash, the slowest steps), or with --low F the floor plus F of the way to the ceiling (a
squeeze that leaves the cache most of its bundles, as a phone's moderate pressure would). For each change it records the server's own figure
(replan_latency_ms: from the decision to its application between two steps) and the operator's
(the PUT sent to GET /admin/v1/memory showing the plan applied). Prints the medians, p90 and
maxima, over all changes and apart for the shrinks (to the low budget, what pressure needs fast)
and the grows (back to the ceiling), and the decode step time for scale (a plan waits for the
step in flight: a shrink waits for a step run at the ceiling, a grow for one run at the low
budget, which at the floor reads every active neuron from flash).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

KEY = "replan-bench-admin-key-0123456789"


def call(port, method, path, body=None, timeout=300):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {KEY}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sparrowd", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--cache-mb", type=int)
    p.add_argument("--changes", type=int, default=20)
    p.add_argument("--streams", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctx", type=int, default=512)
    p.add_argument("--pause", type=float, default=1.0, help="seconds between changes")
    p.add_argument("--low", type=float, default=0.0,
                   help="the low budget, as a share of the way from the floor to the ceiling")
    p.add_argument("--log", help="keep sparrowd's log here (each plan's line says how long "
                                  "applying it took)")
    p.add_argument("--hw-profile", default="none",
                   help="sparrowd's hw_profile: a file from `sparrow profile-hw` plans every "
                        "budget (none: the fixed split)")
    args = p.parse_args()
    port = 18433
    keys = tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False)
    keys.write(f"bench {KEY}\n")
    keys.close()
    cmd = [args.sparrowd, "--model", args.model, "--port", str(port), "--grpc-port", "-1",
           "--threads", str(args.threads), "--n-ctx", str(args.ctx), "--max-running",
           str(args.streams), "--admin-key-file", keys.name, "--api-key-file", keys.name,
           "--memory-pressure", "2", "--hw-profile", args.hw_profile]
    if args.cache_mb is not None:
        cmd += ["--cache-mb", str(args.cache_mb)]
    log = open(args.log, "w") if args.log else subprocess.DEVNULL
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                m = call(port, "GET", "/admin/v1/memory", timeout=2)
                break
            except Exception:
                if server.poll() is not None:
                    raise SystemExit("sparrowd exited while starting: " + " ".join(cmd))
                time.sleep(0.5)
        floor, ceiling = m["floor_bytes"], m["ceiling_bytes"]
        # The first tokens let a planner learn a PowerInfer file's share of active neurons.
        call(port, "POST", "/v1/completions", {"prompt": "Warm up", "max_tokens": 4})
        stop = threading.Event()
        steps = []

        def stream(i):
            n = 0
            while not stop.is_set():
                t = time.time()
                try:
                    out = call(port, "POST", "/v1/completions",
                               {"prompt": f"Stream {i}.{n}", "max_tokens": 32, "temperature": 0})
                except Exception:  # refused while starved, or the server is going away
                    time.sleep(0.2)
                    continue
                n += 1
                steps.append((time.time() - t) / max(1, out["usage"]["completion_tokens"]))

        threads = [threading.Thread(target=stream, args=(i,), daemon=True)
                   for i in range(args.streams)]
        for t in threads:
            t.start()
        time.sleep(3)
        server_ms, operator_ms, shrink_ms, grow_ms = [], [], [], []
        for i in range(args.changes):
            low = floor + int(args.low * (ceiling - floor))
            want = low if i % 2 == 0 else ceiling
            t = time.time()
            put = call(port, "PUT", "/admin/v1/memory/budget", {"bytes": want})
            version = put["plan_version"]
            while True:
                m = call(port, "GET", "/admin/v1/memory")
                if m["applied_plan_version"] >= version:
                    break
                time.sleep(0.002)
            operator_ms.append((time.time() - t) * 1000)
            server_ms.append(m["replan_latency_ms"])
            (shrink_ms if want == low else grow_ms).append(m["replan_latency_ms"])
            time.sleep(args.pause)
        stop.set()
        step_ms = statistics.median(steps) * 1000 if steps else float("nan")
        print(json.dumps({
            "model": os.path.basename(args.model), "changes": args.changes,
            "streams": args.streams, "floor_mib": floor >> 20, "ceiling_mib": ceiling >> 20,
            "low_mib": (floor + int(args.low * (ceiling - floor))) >> 20,
            "server_ms": {"median": round(statistics.median(server_ms), 2),
                          "p90": round(pct(server_ms, 0.9), 2), "max": round(max(server_ms), 2)},
            "server_ms_shrink": {"median": round(statistics.median(shrink_ms), 2),
                                 "max": round(max(shrink_ms), 2)},
            "server_ms_grow": {"median": round(statistics.median(grow_ms), 2),
                               "max": round(max(grow_ms), 2)},
            "operator_ms": {"median": round(statistics.median(operator_ms), 2),
                            "p90": round(pct(operator_ms, 0.9), 2),
                            "max": round(max(operator_ms), 2)},
            "ms_per_token_per_stream": round(step_ms, 1),
            "planned": m.get("plan") is not None,
            "solve_ms": m["plan"]["solve_ms"] if m.get("plan") else None}))
    finally:
        server.kill()
        server.wait()
        os.unlink(keys.name)


if __name__ == "__main__":
    main()
