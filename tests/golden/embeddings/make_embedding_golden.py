#!/usr/bin/env python3
"""Writes an embedding golden file from llama.cpp's llama-embedding (see README.md here).

Runs the given llama-embedding binary once per (text, pooling), with --embd-normalize 2 and
--embd-output-format json, and keeps only its output vectors. The binary is a peer built outside
the project: its path is an argument, never built or committed here.

  make_embedding_golden.py --llama-embedding PATH --shared-dir ../shared \
      --model models/stories260K.gguf --n-ctx 128 --pooling mean,cls,last --out FILE.json \
      [--cache-type f32] [--reference "llama.cpp c392e509"] [--extra "-fa off"] \
      [--synthetic FAMILY --seed N] TEXT...

With --synthetic, the model is a synthetic_arch.h file (tests/util) written by
`write_arch_model FAMILY FILE SEED` beforehand; the golden says so, and the test writes the same
file itself.
"""
import argparse
import json
import os
import subprocess
import sys


def embed(binary, model, n_ctx, cache_type, pooling, text, extra):
    cmd = [binary, "-m", model, "-p", text, "--pooling", pooling, "--embd-normalize", "2",
           "--embd-output-format", "json", "-c", str(n_ctx), "-b", str(n_ctx), "-ub", str(n_ctx),
           "-t", "1", "-ctk", cache_type, "-ctv", cache_type] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    start = out.stdout.find("{")
    doc, _ = json.JSONDecoder().raw_decode(out.stdout[start:])
    if len(doc["data"]) != 1:
        sys.exit(f"expected one embedding for '{text}', got {len(doc['data'])}")
    return doc["data"][0]["embedding"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-embedding", required=True)
    ap.add_argument("--shared-dir", required=True)
    ap.add_argument("--model", required=True, help="relative to the shared dir")
    ap.add_argument("--n-ctx", type=int, required=True)
    ap.add_argument("--pooling", required=True, help="comma-separated: mean,cls,last")
    ap.add_argument("--cache-type", default="f32",
                    help="the KV cache's type (f32: no F16 rounding of Q and of the attention "
                         "weights, which llama.cpp does with an F16 cache and Sparrow does not)")
    ap.add_argument("--reference", default="llama.cpp c392e509")
    ap.add_argument("--extra", default="", help="further llama-embedding flags")
    ap.add_argument("--synthetic", default="", help="the synthetic_arch.h family of the model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("texts", nargs="+")
    a = ap.parse_args()
    extra = a.extra.split()
    model = os.path.join(a.shared_dir, a.model)
    cases = []
    for pooling in a.pooling.split(","):
        for text in a.texts:
            cases.append({"pooling": pooling, "text": text,
                          "embedding": embed(a.llama_embedding, model, a.n_ctx, a.cache_type,
                                             pooling, text, extra)})
    golden = {
        "reference": a.reference,
        "command": f"llama-embedding -m {a.model} -p TEXT --pooling POOLING --embd-normalize 2 "
                   f"--embd-output-format json -c {a.n_ctx} -b {a.n_ctx} -ub {a.n_ctx} -t 1 "
                   f"-ctk {a.cache_type} -ctv {a.cache_type} "
                   + " ".join(extra),
        "model": a.model,
        "n_ctx": a.n_ctx,
        "cache_type": a.cache_type,
        "cases": cases,
    }
    if a.synthetic:
        golden["synthetic"] = {"family": a.synthetic, "seed": a.seed}
        golden["made_with"] = f"write_arch_model {a.synthetic} {a.model} {a.seed}"
    with open(a.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
