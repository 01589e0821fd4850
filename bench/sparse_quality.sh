#!/usr/bin/env bash
# Quality cost of threshold sparsity on trained models: perplexity at several --sparsity levels
# for CATS (|silu(gate)|) and TEAL on down's input, as a markdown table of PPL and its change.
#
#   bench/sparse_quality.sh [SPARROW=build/bin/sparrow] [LEVELS="0.25 0.4 0.5 0.6 0.7"] \
#       [CTX=128] [T=2] [SCRATCH=dir] [OUT=file.md]
#
# Models and texts (../shared): the KJV SwiGLU model (F32 and Q4_0; profile from 50k tokens of
# kjv-train.txt, perplexity on the held-out kjv-eval.txt), stories260K and aidreams260K (their
# own samples in testdata/text: the first half calibrates, the second half is scored). Profiles
# go to SCRATCH (outside the repository) and are reused when present.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${SHARED:-$REPO/../shared}"
SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
LEVELS="${LEVELS:-0.25 0.4 0.5 0.6 0.7}"
CTX="${CTX:-128}" T="${T:-2}"
SCRATCH="${SCRATCH:-${TMPDIR:-/tmp}/sparrow-quality}"
OUT="${OUT:-}"
for arg in "$@"; do
  case "$arg" in
    SPARROW=* | LEVELS=* | CTX=* | T=* | SCRATCH=* | OUT=* | SHARED=*) declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "sparse_quality: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[[ -x "$SPARROW" ]] || { echo "sparse_quality: no sparrow binary at $SPARROW (build first)" >&2; exit 1; }
mkdir -p "$SCRATCH"

# Halves of a samples file, split at the middle blank line.
split_text() {
  local src="$1" name="$2" lines half
  lines=$(wc -l <"$src")
  half=$((lines / 2))
  head -n "$half" "$src" >"$SCRATCH/$name.calib.txt"
  tail -n +"$((half + 1))" "$src" >"$SCRATCH/$name.eval.txt"
}
split_text "$SHARED/testdata/text/stories260K-samples.txt" stories
split_text "$SHARED/testdata/text/aidreams260K-samples.txt" aidreams

# name | model | calibration text | eval text | ctx | calibration tokens
CASES=(
  "kjv-f32|$SHARED/kjv/models/kjv-llama-5m-f32.gguf|$SHARED/kjv/text/kjv-train.txt|$SHARED/kjv/text/kjv-eval.txt|$CTX|50000"
  "kjv-q4_0|$SHARED/kjv/models/kjv-llama-5m-q4_0.gguf|$SHARED/kjv/text/kjv-train.txt|$SHARED/kjv/text/kjv-eval.txt|$CTX|50000"
  "stories260K|$SHARED/models/stories260K.gguf|$SCRATCH/stories.calib.txt|$SCRATCH/stories.eval.txt|$CTX|0"
  "aidreams260K|$SHARED/models/aidreams260K-f32.gguf|$SCRATCH/aidreams.calib.txt|$SCRATCH/aidreams.eval.txt|64|0"
)

ppl() {  # model text ctx [extra flags] -> "ppl active_fraction"
  "$SPARROW" perplexity -m "$1" -f "$2" -c "$3" -t "$T" --json "${@:4}" 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.4f %.3f" % (j["perplexity"], j["sparse"]["active_fraction"]))'
}

{
  echo "| model | method | sparsity | active | PPL | change |"
  echo "| --- | --- | ---: | ---: | ---: | ---: |"
  for c in "${CASES[@]}"; do
    IFS='|' read -r name model calib eval ctx tokens <<<"$c"
    [[ -f "$model" ]] || { echo "sparse_quality: skipping $name ($model missing)" >&2; continue; }
    profile="$SCRATCH/$name.profile"
    [[ -f "$profile" ]] || "$SPARROW" profile -m "$model" -f "$calib" -o "$profile" -c "$ctx" \
      --tokens "$tokens" -t "$T" 2>/dev/null
    read -r base _ < <(ppl "$model" "$eval" "$ctx")
    echo "| $name | dense | 0 | 1.000 | $base | |"
    for method in cats teal-down; do
      for s in $LEVELS; do
        read -r p a < <(ppl "$model" "$eval" "$ctx" --profile "$profile" --sparsity "$s" \
          --sparsity-method "$method")
        change=$(python3 -c "print('%+.2f%%' % (100 * ($p / $base - 1)))")
        echo "| $name | $method | $s | $a | $p | $change |"
      done
    done
  done
} | tee ${OUT:+"$OUT"}
