#!/usr/bin/env python3
"""Writes a rerank golden file from llama.cpp's llama-embedding (see README.md here).

Writes the synthetic reranker with the project's write_arch_model, then runs the given
llama-embedding binary once per (query, document) pair, "QUERY<TAB>DOCUMENT" with --pooling rank,
--embd-normalize -1 (scores as computed) and --embd-output-format raw (one line of scores, 7
decimals), and keeps only the scores. The binary is a peer built outside the project: its path
is an argument, never built or committed here.

  make_rerank_golden.py --llama-embedding PATH --write-arch-model PATH --family qwen3rerank \
      --n-ctx 512 --out FILE.json [--reference "llama.cpp d32676d7"] [--extra "-fa off"] \
      --query Q --documents D1 D2 ... [--query Q2 --documents ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return out.stdout


def scores(binary, model, n_ctx, query, document, extra):
    cmd = [binary, "-m", model, "-p", query + "\t" + document, "--pooling", "rank",
           "--embd-normalize", "-1", "--embd-output-format", "raw", "-c", str(n_ctx),
           "-b", str(n_ctx), "-ub", str(n_ctx), "-t", "1", "-ctk", "f32", "-ctv", "f32"] + extra
    lines = [l for l in run(cmd).splitlines() if l.strip()]
    values = [float(x) for x in lines[0].split()]
    return values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-embedding", required=True)
    ap.add_argument("--write-arch-model", required=True)
    ap.add_argument("--family", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-ctx", type=int, required=True)
    ap.add_argument("--reference", default="llama.cpp d32676d7")
    ap.add_argument("--extra", default="", help="further llama-embedding flags")
    ap.add_argument("--out", required=True)
    ap.add_argument("--query", action="append", required=True)
    ap.add_argument("--documents", nargs="+", action="append", required=True)
    a = ap.parse_args()
    if len(a.query) != len(a.documents):
        sys.exit("each --query needs its --documents")
    extra = a.extra.split()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, f"synth-{a.family}.gguf")
        run([a.write_arch_model, a.family, model, str(a.seed)])
        cases = []
        for query, documents in zip(a.query, a.documents):
            for doc in documents:
                cases.append({"query": query, "document": doc,
                              "scores": scores(a.llama_embedding, model, a.n_ctx, query, doc,
                                               extra)})
    golden = {
        "reference": a.reference,
        "command": f"llama-embedding -m synth-{a.family}.gguf -p 'QUERY<TAB>DOCUMENT' "
                   f"--pooling rank --embd-normalize -1 --embd-output-format raw -c {a.n_ctx} "
                   f"-b {a.n_ctx} -ub {a.n_ctx} -t 1 -ctk f32 -ctv f32 " + " ".join(extra),
        "family": a.family,
        "seed": a.seed,
        "n_ctx": a.n_ctx,
        "cases": cases,
    }
    with open(a.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
