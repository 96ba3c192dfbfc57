#!/usr/bin/env bash
# The e2e suite on a generated collection: queries/s and latency percentiles by batch size,
# AND and OR, k 10, 100 and 1000, transfers apart from kernels.
#   bench/e2e.sh BUILD_DIR [DEVICES] [DOCS] [QUERIES] [SECONDS]
# DEVICES: comma list (default: auto); DOCS default 200000, QUERIES 20000 (generated, the
# Million Query length mix); SECONDS per row, default 1. JSON lines to BUILD_DIR/bench/e2e.jsonl.
set -euo pipefail
build=${1:?usage: bench/e2e.sh BUILD_DIR [DEVICES] [DOCS] [QUERIES] [SECONDS]}
cls=$build/clsearch
devices=${2:-auto} docs=${3:-200000} queries=${4:-20000} seconds=${5:-1}
out=$build/bench/e2e-$docs
mkdir -p "$out"
[ -f "$out/gen/corpus.jsonl" ] || "$cls" generate -o "$out/gen" --docs "$docs" --queries "$queries" >/dev/null
[ -f "$out/bp.128.idx" ] || "$cls" index -q -c jsonl -o "$out/bp.128.idx" "$out/gen/corpus.jsonl"
"$cls" bench e2e -x "$out/bp.128.idx" -q "$out/gen/topics.tsv" -d "$devices" -m or,and -k 10,100,1000 \
  -b 1,16,256,1024,4096,16384 --seconds "$seconds" --json "$build/bench/e2e.jsonl"
