#!/usr/bin/env bash
# Where the index writer should encode: its encoding of a generated collection's real lists on
# host threads (1, half and all of the cores) against each OpenCL device at each WG_ENCODE, every
# codec at block 128 and bp at the other block sizes, each device's output checked against the
# host's bit for bit (clsearch bench encode). Then the whole build both ways, `index -v` with and
# without -d, the two files compared with cmp.
#   bench/encode.sh BUILD_DIR [DEVICES] [DOCS] [REPEATS]
# DEVICES: comma list (default every device); DOCS: documents generated (default 2000000, about
# 222 million postings). Table to stdout, JSON lines to BUILD_DIR/bench/encode.jsonl.
set -euo pipefail
build=${1:?usage: bench/encode.sh BUILD_DIR [DEVICES] [DOCS] [REPEATS]}
src=$(cd "$(dirname "$0")/.." && pwd)
cls=$build/clsearch
devices=${2:-$("$cls" devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p' | paste -sd, -)}
docs=${3:-2000000}
repeats=${4:-5}
out=$build/bench/encode-$docs
mkdir -p "$out"
json=$build/bench/encode.jsonl
cores=$(nproc)
threads=$(printf '%s\n' 1 $((cores / 2)) "$cores" | awk '$1 >= 1' | sort -nu | paste -sd, -)
echo "commit ${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $docs generated documents, devices $devices"
[ -f "$out/gen/corpus.jsonl" ] || "$cls" generate -o "$out/gen" --docs "$docs" --queries 10 >/dev/null
[ -f "$out/host.idx" ] || "$cls" index -q -c jsonl -o "$out/host.idx" "$out/gen/corpus.jsonl"
"$cls" bench encode -x "$out/host.idx" -d "$devices" -t "$threads" --wg 32,64,128,256 -r "$repeats" \
  --layout raw:128,bp:128,pfor:128:1,pfor:128:3,optpfd:128,rice:128,bp:64,bp:256,bp:512 --json "$json"
# the whole build, host against the first device: stage times (-v) and the files compared
first=${devices%%,*}
"$cls" index -v -c jsonl -o "$out/host.idx" "$out/gen/corpus.jsonl" 2>&1 | grep -E '^(indexed|stage encoding)'
"$cls" index -v -c jsonl -d "$first" -o "$out/dev.idx" "$out/gen/corpus.jsonl" 2>&1 | grep -E '^(indexed|stage encoding)'
cmp "$out/host.idx" "$out/dev.idx" && echo "index -d $first: byte-identical to the host's build"
