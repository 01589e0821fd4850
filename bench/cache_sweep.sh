#!/usr/bin/env bash
# Decode speed against neuron-cache (or expert-cache) size for a converted model (FFN on flash):
# Sparrow's tok/s, hit rate, flash bytes per token and, for MoE files, the read-ahead's accuracy
# with --cache-mb from 10% to 100% of the bundle bytes, for each hot share, written as a table
# (stdout) and a data file; with gnuplot (Debian's gnuplot-nox) also a PNG plot.
#
#   bench/cache_sweep.sh CONVERTED=model.sparrow.gguf [SHARES="0.1 0.2 ... 1.0"] [HOT="0.5 1.0"]
#       [N=16] [T=2] [DEPTH=128] [OUT=bench/cache_sweep] [SPARROW=build/bin/sparrow]
#       [EXTRA="--no-read-ahead"] [TITLE="..."]
# PLOT_ONLY=1 redraws the plot of an existing OUT.dat.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONVERTED="${CONVERTED:-}" SHARES="${SHARES:-0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0}"
HOT="${HOT:-0.5 1.0}" N="${N:-16}" T="${T:-2}" DEPTH="${DEPTH:-128}"
OUT="${OUT:-$REPO/bench/cache_sweep}" SPARROW="${SPARROW:-$REPO/build/bin/sparrow}"
EXTRA="${EXTRA:-}" TITLE="${TITLE:-Decode speed against neuron cache size (FFN on flash)}"
for arg in "$@"; do
  case "$arg" in
    CONVERTED=* | SHARES=* | HOT=* | N=* | T=* | DEPTH=* | OUT=* | SPARROW=* | EXTRA=* | TITLE=*)
      declare "${arg%%=*}=${arg#*=}" ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "cache_sweep: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[[ -f "$CONVERTED" || -n "${PLOT_ONLY:-}" ]] || { echo "cache_sweep: CONVERTED= must name a converted model" >&2; exit 2; }
if [[ -z "${PLOT_ONLY:-}" ]]; then
# The bundle bytes: the ffn_bundles (or ffn_expert_bundles) tensors `sparrow info` lists.
bundle_mib=$("$SPARROW" info "$CONVERTED" 2>/dev/null |
  awk '$1 ~ /ffn_(expert_)?bundles$/ { b += $(NF - 1) } END { printf "%.1f", b / 1048576 }')
echo "# $CONVERTED: bundles $bundle_mib MiB, $N tokens, t=$T, io depth $DEPTH $EXTRA" >"$OUT.dat"
echo "# share cache_mib hot_share tok_s hit_rate flash_kib_per_token reads_per_token prefetch_accuracy wait_ms_per_token" >>"$OUT.dat"
echo "| cache share | cache MiB | hot share | tok/s | hit rate | flash KiB/token | reads/token | read-ahead accuracy | flash wait ms/token |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in $SHARES; do
  mib=$(python3 -c "print('%.0f' % ($s * $bundle_mib))")
  for h in $HOT; do
    line=$("$SPARROW" bench -m "$CONVERTED" -p 0 -n "$N" -t "$T" -r 1 --no-bandwidth --json \
      --cache-mb "$mib" --cache-hot-share "$h" --io-depth "$DEPTH" $EXTRA 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["results"][0]
c = r["sparse"]["cache"]
print("%.3f %.3f %.1f %.1f %.3f %.2f" % (r["median_ts"], c["hit_rate"], c["flash_bytes_per_token"] / 1024,
      c["flash_reads_per_token"], c.get("prefetch_accuracy", 0), c["flash_wait_ms_per_token"]))')
    read -r ts hit kib reads acc wait <<<"$line"
    echo "$s $mib $h $ts $hit $kib $reads $acc $wait" >>"$OUT.dat"
    echo "| $s | $mib | $h | $ts | $hit | $kib | $reads | $acc | $wait |"
  done
done
fi
if command -v gnuplot >/dev/null 2>&1; then
  plot=""
  for h in $HOT; do
    awk -v h="$h" '!/^#/ && $3 == h' "$OUT.dat" >"$OUT.hot$h.dat"
    plot+="${plot:+, }'$OUT.hot$h.dat' using (\$1*100):4 with linespoints lw 2 title 'tok/s, hot share $h'"
    plot+=", '$OUT.hot$h.dat' using (\$1*100):(\$5*100) axes x1y2 with lines dashtype 2 title 'hit rate %, hot share $h'"
    if awk -v h="$h" '!/^#/ && $3 == h && $8 > 0 { f = 1 } END { exit !f }' "$OUT.dat"; then
      plot+=", '$OUT.hot$h.dat' using (\$1*100):(\$8*100) axes x1y2 with lines dashtype 3 title 'read-ahead accuracy %, hot share $h'"
    fi
  done
  gnuplot <<GP
set terminal pngcairo size 900,540
set output '$OUT.png'
set title '$TITLE'
set xlabel 'cache, % of the bundle bytes'
set ylabel 'tokens/s'
set y2label 'hit rate (and read-ahead accuracy), %'
set ytics nomirror
set y2tics
set key right bottom
set grid
plot $plot
GP
  rm -f "$OUT".hot*.dat
  echo "plot: $OUT.png"
fi
