#!/usr/bin/env python3
"""Validity over a public schema set: JSON-Schema-Test-Suite's schemas on a random-weight model.

  bench/grammar/schema_suite.py --suite /path/to/JSON-Schema-Test-Suite \
      --sparrowd build/bin/sparrowd --model ../shared/models/llama-2-tiny-random.gguf \
      [--llama-converter /path/to/llama.cpp/examples/json_schema_to_grammar.py ...] \
      [--draft draft2020-12] [--n 8] [--max-tokens 96]

Every test group's schema of the suite's `tests/<draft>/*.json` (not `optional/`) is sent to one
sparrowd as /v1/completions `json_schema` with n answers at temperature 1. A 400 is a refusal
(the schema is outside the subset); otherwise each answer that ends with "stop" is checked with
the `jsonschema` package (Draft 2020-12). It prints the share of schemas accepted, the share
of stopped answers that validate, and, for each llama.cpp json_schema_to_grammar.py given
(run with python3: exit 0 = accepted), that converter's share of the same schemas accepted.
The suite is not part of this repository: fetch it and pass its path (a checkout, or a
directory holding tests/<draft>/).
"""
import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jsonschema


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def schemas(suite, draft):
    out = []
    for path in sorted(glob.glob(os.path.join(suite, "tests", draft, "*.json"))):
        for i, group in enumerate(json.load(open(path))):
            out.append((f"{os.path.basename(path)}#{i}", group["schema"]))
    return out


def llama_accepts(converter, schema):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(schema, f)
    try:
        r = subprocess.run([sys.executable, converter, f.name], capture_output=True, timeout=60)
        return r.returncode == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--draft", default="draft2020-12")
    ap.add_argument("--sparrowd", default="build/bin/sparrowd")
    ap.add_argument("--model", default="../shared/models/llama-2-tiny-random.gguf")
    ap.add_argument("--llama-converter", action="append", default=[])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    cases = schemas(args.suite, args.draft)
    if not cases:
        sys.exit(f"schema_suite: no tests/{args.draft}/*.json under {args.suite}")
    port = free_port()
    proc = subprocess.Popen([args.sparrowd, "--model", args.model, "--port", str(port),
                             "--grpc-port", "-1", "--threads", str(args.threads),
                             "--n-ctx", "512", "--log-level", "warn", "--memory-pressure", "0",
                             "--hw-profile", "none"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except Exception:
                time.sleep(0.25)
        accepted = answers = stopped = valid = 0
        refusals, invalid = {}, []
        for name, schema in cases:
            status, body = post(port, {"prompt": "JSON:", "max_tokens": args.max_tokens,
                                       "temperature": 1.0, "top_k": 0, "top_p": 1.0,
                                       "min_p": 0.0, "seed": 1, "n": args.n,
                                       "json_schema": schema})
            if status != 200:
                msg = body.get("error", {}).get("message", str(status))
                key = msg.split(": keyword ")[-1] if "keyword" in msg else msg[:60]
                refusals[key] = refusals.get(key, 0) + 1
                continue
            accepted += 1
            validator = jsonschema.Draft202012Validator(schema)
            for c in body["choices"]:
                answers += 1
                if c["finish_reason"] != "stop":
                    continue
                stopped += 1
                try:
                    ok = validator.is_valid(json.loads(c["text"]))
                except Exception:
                    ok = False
                valid += ok
                if not ok:
                    invalid.append((name, c["text"][:120]))
    finally:
        proc.terminate()
        proc.wait()
    print(f"Suite: {args.suite} tests/{args.draft}: {len(cases)} schemas; model "
          f"{os.path.basename(args.model)}, n={args.n}, max_tokens={args.max_tokens}, "
          "temperature 1")
    print(f"sparrow: accepted {accepted}/{len(cases)} ({100 * accepted / len(cases):.1f} %); "
          f"answers {answers}, stopped {stopped}, valid {valid}/{stopped} "
          f"({100 * valid / max(stopped, 1):.1f} %)")
    for conv in args.llama_converter:
        ok = sum(llama_accepts(conv, s) for _, s in cases)
        print(f"llama.cpp {conv}: accepted {ok}/{len(cases)} ({100 * ok / len(cases):.1f} %)")
    print("refusals by reason: " + json.dumps(dict(sorted(refusals.items(),
                                                          key=lambda kv: -kv[1]))))
    for name, text in invalid[:20]:
        print(f"invalid: {name}: {text!r}")


if __name__ == "__main__":
    main()
