#!/usr/bin/env python3
"""Writes a vision golden file from llama.cpp's llama-mtmd-cli (see README.md here).

Writes the synthetic gemma3 projector with the project's write_mmproj, then runs llama-mtmd-cli
once per image with MTMD_DEBUG_EMBEDDINGS=1, which makes clip.cpp print the image's output
embeddings: their shape, the first and last 16 values of token 0 and statistics over all of
them (6 decimals; -lv 4 lets clip.cpp's info lines through). Those lines are what the file keeps. The binary is a peer built outside the
project: its path is an argument, never built or committed here.

  make_vision_golden.py --llama-mtmd-cli PATH --write-mmproj PATH --text-model synth-gemma3-f32.gguf \
      [--seed 1] [--type f32|f16] [--reference "llama.cpp d32676d7"] [--tolerance-absolute X] \
      --out FILE.json IMAGE.png ...
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

FLAGS = ["-p", "Describe the image.", "-n", "1", "--temp", "0", "-t", "1", "-fa", "off",
         "--chat-template", "gemma", "-c", "512", "-lv", "4"]


def embeddings(binary, text_model, mmproj, image):
    cmd = [binary, "-m", text_model, "--mmproj", mmproj, "--image", image] + FLAGS
    env = dict(os.environ, MTMD_DEBUG_EMBEDDINGS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    log = out.stdout + out.stderr
    block = log.split("=== MTMD_DEBUG_EMBEDDINGS ===")[-1].split("=== END MTMD_DEBUG_EMBEDDINGS")[0]
    # Each value is a log message of its own, after the log's time and level prefix.
    block = re.sub(r"\d+\.\d+\.\d+\.\d+ [A-Z] ", "", block)

    def floats(label):
        m = re.search(re.escape(label) + r"\s*([-0-9. e+]+)", block)
        if not m:
            sys.exit(f"no '{label}' in llama-mtmd-cli's output:\n{block}")
        return [float(x) for x in m.group(1).split()]

    shape = re.search(r"Shape: \[(\d+), (\d+)\]", block)
    stats = re.search(r"Stats: mean=(\S+), std=(\S+), min=(\S+), max=(\S+), sum=(\S+)", block)
    if not shape or not stats:
        sys.exit(f"no shape or stats in llama-mtmd-cli's output:\n{block}")
    return {
        "n_embd": int(shape.group(1)),
        "n_tokens": int(shape.group(2)),
        "token0_first": floats("Token 0 (first 16 values):"),
        "token0_last": floats("Token 0 (last 16 values):"),
        "stats": dict(zip(["mean", "std", "min", "max", "sum"],
                          [float(stats.group(i).rstrip(",")) for i in range(1, 6)])),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-mtmd-cli", required=True)
    ap.add_argument("--write-mmproj", required=True)
    ap.add_argument("--text-model", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--type", default="f32", choices=["f32", "f16"])
    ap.add_argument("--reference", default="llama.cpp d32676d7")
    ap.add_argument("--tolerance-absolute", type=float,
                    help="the file's own absolute bound (README.md says when one is needed)")
    ap.add_argument("--out", required=True)
    ap.add_argument("images", nargs="+")
    a = ap.parse_args()
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        mmproj = os.path.join(tmp, "synth-gemma3-mmproj.gguf")
        subprocess.run([a.write_mmproj, mmproj, str(a.seed), a.type], check=True)
        for image in a.images:
            case = {"image": os.path.basename(image)}
            case.update(embeddings(a.llama_mtmd_cli, a.text_model, mmproj, image))
            cases.append(case)
    golden = {
        "reference": a.reference,
        "command": ("MTMD_DEBUG_EMBEDDINGS=1 llama-mtmd-cli -m " + os.path.basename(a.text_model) +
                    " --mmproj synth-gemma3-mmproj.gguf --image IMAGE " + " ".join(
                        f"'{f}'" if " " in f else f for f in FLAGS)),
        "projector": {"family": "gemma3", "seed": a.seed, "type": a.type},
    }
    if a.tolerance_absolute is not None:
        golden["tolerance"] = {"absolute": a.tolerance_absolute}
    golden["cases"] = cases
    with open(a.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
