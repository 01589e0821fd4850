#!/usr/bin/env bash
# Sparrow vs llama.cpp throughput, test by test, as a markdown table of ratios.
#
#   bench/compare.sh LLAMA_BENCH=/path/to/llama-bench [P=512] [N=128] [T=1,2] [R=5] \
#       [SPARROW=build/bin/sparrow] [SCRATCH=dir] [OUT=file.md] \
#       [SHAPES="qwen3-1.7b gemma-3-1b qwen3-30b-a3b:16"] [TYPES="q4_0 q4_k_m"] [model.gguf ...]
#
# For each model and thread count it runs `sparrow bench` and llama-bench with the same
# -p/-n/-t/-r, alternating which goes first, and reports median tokens/s of both, the ratio
# sparrow/llama.cpp and each one's fraction of the memory roofline (weight bytes per token
# times tokens/s over the read bandwidth `sparrow bench` measured). Without model paths it
# generates synthetic SmolLM2-135M, Qwen2.5-0.5B and Llama-3.2-1B in q8_0, q4_0, q4_k_m and
# f16 into SCRATCH (outside the repository; files are reused when present); SHAPES and TYPES
# choose other `sparrow mkmodel` shapes and types, SHAPE:N keeping N layers (file SHAPE-LN-TYPE).
# Below the table: every repetition's tokens/s of both engines.
# The peer binary is never built here: pass the path of an existing one.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_BENCH="${LLAMA_BENCH:-}"
P="${P:-512}" N="${N:-128}" T="${T:-1,2}" R="${R:-5}"
SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
SCRATCH="${SCRATCH:-${TMPDIR:-/tmp}/sparrow-bench-models}"
VOCAB="${VOCAB:-$REPO/../shared/models/vocab/ggml-vocab-llama-spm.gguf}"
OUT="${OUT:-}"
SHAPES="${SHAPES:-smollm2-135m qwen2.5-0.5b llama-3.2-1b}" TYPES="${TYPES:-q8_0 q4_0 q4_k_m f16}"
MODELS=()
for arg in "$@"; do
  case "$arg" in
    LLAMA_BENCH=* | P=* | N=* | T=* | R=* | SPARROW=* | SCRATCH=* | OUT=* | VOCAB=* | SHAPES=* | TYPES=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) MODELS+=("$arg") ;;
  esac
done

if [[ -z "$LLAMA_BENCH" ]]; then
  echo "compare.sh: no llama-bench given; pass LLAMA_BENCH=/path/to/llama-bench" \
       "(this script never builds llama.cpp)" >&2
  exit 2
fi
if [[ ! -x "$LLAMA_BENCH" ]]; then
  echo "compare.sh: LLAMA_BENCH=$LLAMA_BENCH is not an executable file" >&2
  exit 2
fi
if [[ ! -x "$SPARROW" ]]; then
  echo "compare.sh: no sparrow binary at $SPARROW; build it or pass SPARROW=path" >&2
  exit 2
fi
if (( R < 5 )); then echo "compare.sh: note: R=$R; use R>=5 for numbers worth recording" >&2; fi
command -v jq > /dev/null || { echo "compare.sh: jq is required" >&2; exit 2; }

if (( ${#MODELS[@]} == 0 )); then
  mkdir -p "$SCRATCH"
  for spec in $SHAPES; do
    shape="${spec%%:*}" layers=0 tag=""
    [[ "$spec" == *:* ]] && layers="${spec#*:}" tag="-L$layers"
    for type in $TYPES; do
      f="$SCRATCH/$shape$tag-$type.gguf"
      [[ -f "$f" ]] || "$SPARROW" mkmodel --shape "$shape" --type "$type" --layers "$layers" \
        --vocab "$VOCAB" -o "$f" >&2
      MODELS+=("$f")
    done
  done
fi

median() { jq -s 'sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end'; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
ROWS=""
BW_NOTE=""
RUNS=""
flip=0
IFS=',' read -r -a THREADS <<< "$T"
for model in "${MODELS[@]}"; do
  for t in "${THREADS[@]}"; do
    run_sparrow() {
      "$SPARROW" bench -m "$model" -p "$P" -n "$N" -t "$t" -r "$R" --json > "$TMP/s.json"
    }
    run_llama() {
      "$LLAMA_BENCH" -m "$model" -p "$P" -n "$N" -t "$t" -r "$R" -o json > "$TMP/l.json" 2> "$TMP/l.err" ||
        { cat "$TMP/l.err" >&2; echo "compare.sh: llama-bench failed on $model" >&2; exit 1; }
    }
    echo "== $(basename "$model") t=$t" >&2
    if (( flip )); then run_llama; run_sparrow; else run_sparrow; run_llama; fi
    flip=$((1 - flip))
    bw=$(jq '.bandwidth[0].bytes_per_s' "$TMP/s.json")
    wbytes=$(jq '.model.weight_bytes_per_token' "$TMP/s.json")
    BW_NOTE+="$(basename "$model") t=$t: read bandwidth $(jq -n "$bw / 1e9 * 100 | round / 100") GB/s, weights per token $(jq -n "$wbytes / 1048576 * 100 | round / 100") MiB"$'\n'
    for kind in pp tg; do
      if [[ $kind == pp ]]; then n=$P; sel='.n_prompt > 0 and .n_gen == 0'; else n=$N; sel='.n_gen > 0 and .n_prompt == 0'; fi
      (( n > 0 )) || continue
      s=$(jq ".results[] | select($sel) | .median_ts" "$TMP/s.json")
      l=$(jq ".[] | select($sel) | .samples_ts[]" "$TMP/l.json" | median)
      ratio=$(jq -n "if $l > 0 then $s / $l * 1000 | round / 1000 else null end")
      if [[ $kind == tg ]]; then
        sr=$(jq -n "$wbytes * $s / $bw * 1000 | round / 10")
        lr=$(jq -n "$wbytes * $l / $bw * 1000 | round / 10")
        roof="$sr % | $lr %"
      else
        roof="- | -"
      fi
      ROWS+="| $(basename "$model" .gguf) | $kind$n | $t | $(printf %.2f "$s") | $(printf %.2f "$l") | $ratio | $roof |"$'\n'
      RUNS+="$(basename "$model" .gguf) $kind$n t=$t: sparrow $(jq -c "[.results[] | select($sel) | .samples_ts[] * 100 | round / 100]" "$TMP/s.json")"
      RUNS+=", llama.cpp $(jq -c "[.[] | select($sel) | .samples_ts[] * 100 | round / 100]" "$TMP/l.json")"$'\n'
    done
  done
done

REPORT="$(
  echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$REPO" rev-parse HEAD 2> /dev/null || echo unknown); CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "Command: bench/compare.sh P=$P N=$N T=$T R=$R $(basename -a "${MODELS[@]}" | tr '\n' ' ')(median tokens/s of R repetitions after a warm-up)"
  echo
  echo "| model | test | threads | sparrow t/s | llama.cpp t/s | ratio | sparrow roofline | llama.cpp roofline |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  printf '%s' "$ROWS"
  echo
  printf '%s' "$BW_NOTE"
  echo
  echo "Tokens/s of each repetition:"
  echo
  printf '%s' "$RUNS"
)"
echo "$REPORT"
if [[ -n "$OUT" ]]; then echo "$REPORT" > "$OUT"; echo "compare.sh: wrote $OUT" >&2; fi
