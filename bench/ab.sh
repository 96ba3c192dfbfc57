#!/usr/bin/env bash
# Two builds on one collection, in one run, turn about: for each build an engine start with -v
# (start-up, and the device's check of every block), then `bench e2e` A, B, A, B, so that a
# change's cost is read against the spread of the same build measured twice.
#   bench/ab.sh BUILD_A BUILD_B INDEX TOPICS [DEVICE] [MODES] [K] [BATCHES] [SECONDS]
# DEVICE default gpu; MODES and,or; K 10; BATCHES 1,4096; SECONDS 2. JSON lines of each e2e run
# to BUILD_X/bench/ab-N.jsonl; a table of q/s by build, mode and batch last.
set -euo pipefail
a=${1:?usage: bench/ab.sh BUILD_A BUILD_B INDEX TOPICS [DEVICE] [MODES] [K] [BATCHES] [SECONDS]}
b=${2:?} idx=${3:?} topics=${4:?}
dev=${5:-gpu} modes=${6:-and,or} k=${7:-10} batches=${8:-1,4096} seconds=${9:-2}
head -n 16 "$topics" > "${TMPDIR:-/tmp}/ab-topics.$$"
for build in "$a" "$b"; do
  echo "== $build: engine start"
  "$build/clsearch" search -v -x "$idx" -q "${TMPDIR:-/tmp}/ab-topics.$$" -d "$dev" -k "$k" -o /dev/null 2>&1 |
    grep -E "^device:|engine start-up|checked on the device|lists:" || true
done
rm -f "${TMPDIR:-/tmp}/ab-topics.$$"
n=0
for build in "$a" "$b" "$a" "$b"; do
  n=$((n + 1))
  mkdir -p "$build/bench"
  echo "== run $n: $build"
  "$build/clsearch" bench e2e -x "$idx" -q "$topics" -d "$dev" -m "$modes" -k "$k" -b "$batches" \
    --seconds "$seconds" --json "$build/bench/ab-$n.jsonl" --force
done
python3 - "$a" "$b" <<'EOF'
import json, sys
a, b = sys.argv[1], sys.argv[2]
rows = {}
for n, build in enumerate([a, b, a, b], 1):
    for line in open(f"{build}/bench/ab-{n}.jsonl"):
        r = json.loads(line)
        key = (r.get("mode"), r.get("k"), r.get("batch"))
        q = r.get("qps")
        if q is None or None in key:
            continue
        rows.setdefault(key, {}).setdefault("A" if build == a else "B", []).append(q)
print(f"A = {a}, B = {b}: q/s, two runs each")
print("mode k batch | A | B | B/A (means of two)")
for key in sorted(rows, key=str):
    A, B = rows[key].get("A", []), rows[key].get("B", [])
    ma = sum(A) / len(A) if A else float("nan")
    mb = sum(B) / len(B) if B else float("nan")
    fa = " ".join(f"{x:,.0f}" for x in A)
    fb = " ".join(f"{x:,.0f}" for x in B)
    print(f"{key[0]} {key[1]} {key[2]} | {fa} | {fb} | {mb / ma:.3f}")
EOF
