#!/usr/bin/env bash
# End-to-end queries per second on CACM and on the generated default collection, OR and AND,
# for the reference engine and the given OpenCL devices, each checked against the reference.
#   bench/run.sh BUILD_DIR [DEVICES] [REPEATS]     (DEVICES: comma list, default every device)
# Writes a table to stdout and JSON lines to BUILD_DIR/bench/qps.jsonl.
set -euo pipefail
build=${1:?usage: bench/run.sh BUILD_DIR [DEVICES] [REPEATS]}
src=$(cd "$(dirname "$0")/.." && pwd)
cls=$build/clsearch bq=$build/bench/bench_qps
devices=${2:-$("$cls" devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p' | paste -sd, -)}
repeats=${3:-5}
out=$build/bench
mkdir -p "$out"
json=$out/qps.jsonl
: >"$json"
data=${CLS_DATA_DIR:-$src/../shared/data}
echo "commit ${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n)"
if [ -f "$data/cacm/cacm.tar.gz" ]; then
  "$cls" index -c html -o "$out/cacm.idx" "$data/cacm/cacm.tar.gz"
  for m in or and; do
    "$bq" -x "$out/cacm.idx" -q "$data/cacm/topics.cacm.txt" -d "ref${devices:+,$devices}" -m "$m" -k 1000 -r "$repeats" --json "$json"
  done
else
  echo "SKIP CACM: $data/cacm/cacm.tar.gz is absent"
fi
[ -f "$out/gen/corpus.jsonl" ] || "$cls" generate -o "$out/gen" --docs 20000 --queries 1000
[ -f "$out/gen.idx" ] || "$cls" index -c jsonl -o "$out/gen.idx" "$out/gen/corpus.jsonl"
for m in or and; do
  "$bq" -x "$out/gen.idx" -q "$out/gen/topics.tsv" -d "ref${devices:+,$devices}" -m "$m" -k 1000 -r "$repeats" --json "$json"
done
