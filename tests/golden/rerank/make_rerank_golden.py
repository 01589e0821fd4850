#!/usr/bin/env python3
"""Writes a rerank golden file from llama.cpp (see README.md here).

Writes the synthetic reranker with the project's write_arch_model, then scores every (query,
document) pair with one of llama.cpp's binaries and keeps only the scores:
- --llama-embedding: once per pair, "QUERY<TAB>DOCUMENT" with --pooling rank, --embd-normalize -1
  (scores as computed) and --embd-output-format raw (one line of scores, 7 decimals);
- --llama-server: one server (--rerank) for the file, one POST /v1/rerank per query with all its
  documents, each document's relevance_score as printed (llama-server's pair format, which
  differs from llama-embedding's for a BERT vocabulary: no [SEP] after the document).
The binary is a peer built outside the project: its path is an argument, never built or
committed here.

  make_rerank_golden.py (--llama-embedding PATH | --llama-server PATH) --write-arch-model PATH \
      --family qwen3rerank --n-ctx 512 --out FILE.json [--reference "llama.cpp d32676d7"] \
      [--extra "-fa off"] --query Q --documents D1 D2 ... [--query Q2 --documents ...]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def server_flags(n_ctx, extra):
    return ["--rerank", "-c", str(n_ctx), "-b", str(n_ctx), "-ub", str(n_ctx), "-np", "1",
            "-t", "1", "-ctk", "f32", "-ctv", "f32"] + extra


def server_scores(binary, model, n_ctx, queries, extra):
    """{(query, document): [score]} from one llama-server's /v1/rerank."""
    port = free_port()
    proc = subprocess.Popen([binary, "-m", model, "--host", "127.0.0.1", "--port", str(port)] +
                            server_flags(n_ctx, extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            if proc.poll() is not None:
                sys.exit(f"{binary} exited ({proc.returncode}):\n{proc.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.1)
        else:
            sys.exit(f"{binary} did not answer /health")
        out = {}
        for query, documents in queries:
            answer = post(base + "/v1/rerank", {"query": query, "documents": documents,
                                               "top_n": len(documents)})
            for r in answer["results"]:
                out[(query, documents[r["index"]])] = [r["relevance_score"]]
        return out
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    binary = ap.add_mutually_exclusive_group(required=True)
    binary.add_argument("--llama-embedding")
    binary.add_argument("--llama-server")
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
        pairs = list(zip(a.query, a.documents))
        if a.llama_server:
            by_pair = server_scores(a.llama_server, model, a.n_ctx, pairs, extra)
        cases = []
        for query, documents in pairs:
            for doc in documents:
                got = (by_pair[(query, doc)] if a.llama_server else
                       scores(a.llama_embedding, model, a.n_ctx, query, doc, extra))
                cases.append({"query": query, "document": doc, "scores": got})
    if a.llama_server:
        command = (f"llama-server -m synth-{a.family}.gguf " +
                   " ".join(server_flags(a.n_ctx, extra)) +
                   "; POST /v1/rerank {query, documents, top_n} per query")
    else:
        command = (f"llama-embedding -m synth-{a.family}.gguf -p 'QUERY<TAB>DOCUMENT' "
                   f"--pooling rank --embd-normalize -1 --embd-output-format raw -c {a.n_ctx} "
                   f"-b {a.n_ctx} -ub {a.n_ctx} -t 1 -ctk f32 -ctv f32 " + " ".join(extra))
    golden = {
        "reference": a.reference,
        "command": command,
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
