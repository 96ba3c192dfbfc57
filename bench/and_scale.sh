#!/usr/bin/env bash
# Queries at scale (AND, or MODE=or for ranked OR), in one run on one device: the 1,000,000-document generated
# collection (the peers' collection: bench/peers on the same corpus and topics) and the
# gov2-scale one (25.2 M documents, 6e9 postings). For each: the time to open the index and
# start the engine, one search of 4,096 topics with -v (where the device time goes, blocks
# decoded against blocks in the lists, and the engine's counters), and bench e2e for the mode at
# k 10 and 1000 by batch size.
#
#   bench/and_scale.sh BUILD DEVICE OUT [SCALES]     SCALES: "m1 gov2" (default)
#
# With DEVICE_MEM (e.g. 8G), each scale is searched again with the engine held to that much
# device memory, so an index larger than half of it runs through the list cache: one -v search
# (lists loaded and found) and bench e2e at k 10. BATCHES overrides the batch sizes, KS the ks.
#
# Indexes are generated into OUT unless already there (gov2: 11.5 GB, about 35 GB of RAM while
# it is built).
set -euo pipefail
build=${1:?BUILD} dev=${2:?DEVICE} out=${3:?OUT} scales=${4:-m1 gov2} mode=${MODE:-and}
cls=$build/clsearch
mkdir -p "$out"
for s in $scales; do
  idx=$out/$s.idx topics=$out/$s.tsv
  if [ ! -f "$idx" ]; then
    case $s in
      m1) "$cls" generate --index "$idx" --topics "$topics" --docs 1000000 --queries 10000 -q ;;
      gov2) "$cls" generate --index "$idx" --topics "$topics" --scale gov2 -q ;;
      *) echo "and_scale.sh: unknown scale $s" >&2; exit 2 ;;
    esac
  fi
  head -4096 "$topics" > "$out/$s.4k.tsv"
  TIMEFORMAT="%R s"
  echo "== $s: open (clsearch stats: open, then sizes): $( { time "$cls" stats "$idx" >/dev/null; } 2>&1 )"
  echo "== $s: one search of 4,096 topics ($mode, k 10), whole command: $( { time "$cls" search -x "$idx" \
    -q "$out/$s.4k.tsv" -m "$mode" -k 10 -d "$dev" -o "$out/$s.$mode.run" -v 2>"$out/$s.search.log"; } 2>&1 )"
  grep -E "start-up|device time|^blocks|^counters|searched" "$out/$s.search.log"
  echo "== $s: bench e2e, $mode"
  "$cls" bench e2e -x "$idx" -q "$topics" -d "$dev" -m "$mode" -k "${KS:-10,1000}" -b "${BATCHES:-1,16,256,1024,4096,16384}" \
    --seconds 2 --json "$out/e2e-$s-$mode.jsonl" | tail -13
  if [ -n "${DEVICE_MEM:-}" ]; then
    echo "== $s: the list cache, device memory $DEVICE_MEM: one search of 4,096 topics (AND, k 10), twice"
    for pass in 1 2; do
      CLSEARCH_DEVICE_MEM=$DEVICE_MEM "$cls" search -x "$idx" -q "$out/$s.4k.tsv" -m "$mode" -k 10 -d "$dev" \
        -o "$out/$s.$mode.cache.run" -v 2>"$out/$s.cache.log"
      grep -E "^lists|start-up|device time|^blocks|list" "$out/$s.cache.log" | head -8
    done
    "$cls" compare "$out/$s.$mode.run" "$out/$s.$mode.cache.run" | tail -1
    CLSEARCH_DEVICE_MEM=$DEVICE_MEM "$cls" bench e2e -x "$idx" -q "$topics" -d "$dev" -m "$mode" -k 10 -b 1024,4096 \
      --seconds 2 --json "$out/e2e-$s-$mode-cache.jsonl" | tail -4
  fi
done
