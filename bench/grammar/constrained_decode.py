#!/usr/bin/env python3
"""Decode tokens/s with a JSON schema over tokens/s without, sparrowd beside llama-server.

  bench/grammar/constrained_decode.py --sparrowd build/bin/sparrowd \
      --llama-server /path/to/llama-server MODEL.gguf [MODEL.gguf ...] \
      [--threads 1,2] [--requests 5] [--max-tokens 64]

For each model and thread count it starts one server at a time (sparrowd, then llama-server,
the order alternating), sends `--requests` streamed /v1/completions at temperature 1 without a
constraint and with the same `json_schema` (llama-server's field, which both servers take),
and measures decode tokens/s on the client: (completion tokens - 1) / (time of the last token
chunk - time of the first). It prints, per engine, the medians and the ratio with / without,
and the ratio of the two engines' constrained speeds. The schema is an unbounded array of
records, so a random-weight model keeps writing until max_tokens. Then the time to first token
with a schema never seen before (40 properties of mixed types, new names each time: its
compilation) beside the time to first token without one. llama.cpp is not built here:
pass the path of an existing llama-server (without one only sparrowd is measured, and the
script says so).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "count", "tags"],
        "additionalProperties": False,
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(engine, binary, model, threads, port):
    if engine == "sparrow":
        cmd = [binary, "--model", model, "--port", str(port), "--grpc-port", "-1",
               "--threads", str(threads), "--n-ctx", "1024", "--log-level", "warn",
               "--memory-pressure", "0", "--hw-profile", "none"]
    else:
        cmd = [binary, "-m", model, "--port", str(port), "-t", str(threads), "-c", "1024",
               "-np", "1", "--log-disable"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc
        except Exception:
            pass
        if proc.poll() is not None:
            sys.exit(f"constrained_decode: {engine} exited with {proc.returncode}: {' '.join(cmd)}")
        time.sleep(0.25)
    proc.kill()
    sys.exit(f"constrained_decode: {engine} did not become ready")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def forty_properties(salt):
    kinds = [{"type": "string", "maxLength": 20}, {"type": "integer", "minimum": 0},
             {"type": "boolean"}, {"enum": ["a", "b", "c"]}, {"type": "number"}]
    props = {f"p{salt}_{i}": kinds[i % len(kinds)] for i in range(40)}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def ttft(port, schema):
    body = {"prompt": "Record:", "max_tokens": 1, "temperature": 1.0, "stream": True}
    if schema is not None:
        body["json_schema"] = schema
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            if raw.startswith(b"data: {"):
                return (time.perf_counter() - t0) * 1000
    return None


def one(port, constrained, max_tokens, seed):
    body = {"prompt": "Records:", "max_tokens": max_tokens, "temperature": 1.0, "seed": seed,
            "top_k": 0, "top_p": 1.0, "min_p": 0.0, "stream": True,
            "stream_options": {"include_usage": True}}
    if constrained:
        body["json_schema"] = SCHEMA
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    first = last = None
    chunks = 0
    tokens = None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            msg = json.loads(line[6:])
            if msg.get("usage"):
                tokens = msg["usage"].get("completion_tokens", tokens)
            if msg.get("timings", {}).get("predicted_n"):
                tokens = tokens or msg["timings"]["predicted_n"]
            choices = msg.get("choices") or []
            if choices and choices[0].get("text"):
                now = time.perf_counter()
                first = first or now
                last = now
                chunks += 1
    tokens = tokens or chunks
    if first is None or last <= first or tokens < 2:
        return None, tokens
    return (tokens - 1) / (last - first), tokens


def measure(engine, binary, model, threads, args):
    port = free_port()
    proc = start(engine, binary, model, threads, port)
    try:
        one(port, False, 8, 0)  # warm-up
        one(port, True, 8, 0)
        out = {}
        for constrained in (False, True):
            rates, toks = [], []
            for i in range(args.requests):
                rate, n = one(port, constrained, args.max_tokens, 100 + i)
                if rate:
                    rates.append(rate)
                    toks.append(n)
            out[constrained] = (statistics.median(rates) if rates else 0.0, rates, toks)
        free = [ttft(port, None) for _ in range(args.requests)]
        fresh = [ttft(port, forty_properties(f"{time.time_ns()}_{i}")) for i in range(args.requests)]
        out["ttft"] = (statistics.median(free), statistics.median(fresh))
        return out
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--sparrowd", default="build/bin/sparrowd")
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER", ""))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    engines = [("sparrow", args.sparrowd)]
    if args.llama_server:
        engines.append(("llama.cpp", args.llama_server))
    else:
        print("constrained_decode: no --llama-server given: measuring sparrowd only",
              file=sys.stderr)
    rows, raw, ttfts = [], [], []
    flip = False
    for model in args.models:
        for t in [int(x) for x in args.threads.split(",")]:
            res = {}
            for engine, binary in (reversed(engines) if flip else engines):
                print(f"== {os.path.basename(model)} t={t} {engine}", file=sys.stderr)
                res[engine] = measure(engine, binary, model, t, args)
            flip = not flip
            s = res["sparrow"]
            row = [os.path.basename(model), str(t), f"{s[False][0]:.2f}", f"{s[True][0]:.2f}",
                   f"{s[True][0] / s[False][0]:.3f}" if s[False][0] else "-"]
            if "llama.cpp" in res:
                l = res["llama.cpp"]
                row += [f"{l[False][0]:.2f}", f"{l[True][0]:.2f}",
                        f"{l[True][0] / l[False][0]:.3f}" if l[False][0] else "-",
                        f"{s[True][0] / l[True][0]:.2f}" if l[True][0] else "-"]
            rows.append(row)
            for engine, r in res.items():
                ttfts.append(f"| {row[0]} | {t} | {engine} | {r['ttft'][0]:.1f} | "
                             f"{r['ttft'][1]:.1f} | {r['ttft'][1] - r['ttft'][0]:.1f} |")
                for c in (False, True):
                    raw.append(f"{row[0]} t={t} {engine} {'schema' if c else 'free'}: "
                               f"tok/s {[round(x, 1) for x in r[c][1]]}, tokens {r[c][2]}")
    head = ["model", "threads", "sparrow free t/s", "sparrow schema t/s", "sparrow ratio"]
    if len(engines) > 1:
        head += ["llama.cpp free t/s", "llama.cpp schema t/s", "llama.cpp ratio",
                 "schema: sparrow / llama.cpp"]
    print(f"Date: {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}; "
          f"requests {args.requests} x {args.max_tokens} tokens, temperature 1, median")
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("| model | threads | engine | TTFT free ms | TTFT new 40-property schema ms | difference |")
    print("| --- | --- | --- | --- | --- | --- |")
    for line in ttfts:
        print(line)
    print()
    for line in raw:
        print(line)


if __name__ == "__main__":
    main()
