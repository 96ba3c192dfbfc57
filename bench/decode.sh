#!/usr/bin/env bash
# Decoding speed per codec on a generated collection: one CPU core (the reference decoder)
# and each OpenCL device, every result checked against the reference.
#   bench/decode.sh BUILD_DIR [DEVICES] [DOCS] [REPEATS]
# DEVICES: comma list (default every device); DOCS: documents generated (default 200000; the
# H100 record uses 2000000, about 222 million postings). The collection is indexed once (bp,
# block 128) and recoded into the other variants. Table to stdout, JSON lines to
# BUILD_DIR/bench/decode.jsonl.
set -euo pipefail
build=${1:?usage: bench/decode.sh BUILD_DIR [DEVICES] [DOCS] [REPEATS]}
src=$(cd "$(dirname "$0")/.." && pwd)
cls=$build/clsearch
devices=${2:-$("$cls" devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p' | paste -sd, -)}
docs=${3:-200000}
repeats=${4:-10}
out=$build/bench/decode-$docs
mkdir -p "$out"
json=$build/bench/decode.jsonl
: >"$json"
echo "commit ${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $docs generated documents"
[ -f "$out/gen/corpus.jsonl" ] || "$cls" generate -o "$out/gen" --docs "$docs" --queries 10 >/dev/null
t0=$(date +%s.%N)
[ -f "$out/bp.128.idx" ] || "$cls" index -q -c jsonl -o "$out/bp.128.idx" "$out/gen/corpus.jsonl"
echo "indexed in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
idx=("$out/bp.128.idx")
for v in raw:128 pfor:128 optpfd:128 rice:128 bp:64 bp:256 bp:512; do
  c=${v%%:*} b=${v#*:}
  [ -f "$out/$c.$b.idx" ] || "$cls" recode "$out/bp.128.idx" -o "$out/$c.$b.idx" --codec "$c" --block "$b"
  idx+=("$out/$c.$b.idx")
done
"$cls" bench decode -d "ref${devices:+,$devices}" -r "$repeats" --json "$json" "${idx[@]}"
