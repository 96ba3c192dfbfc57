#!/usr/bin/env bash
# The end-to-end suite of two source trees, one after the other in one run, on the same generated
# index, topics and device: whether a change moved throughput or latency, in one lease of a
# machine. Each tree is built (Release) in its own folder; the index comes from this tree's
# generator (the file format is the same); bench e2e then runs in the order A, B, A, B, so drift
# of a shared machine shows as a difference between the two runs of one tree.
#
#   bench/compare.sh TREE_A TREE_B DEVICE OUT [DOCS] [QUERIES]
#
# Tables and JSON lines go to OUT/{a,b}.{1,2}.{txt,jsonl}.
#
# Environment: MODES (or,and), KS (10,1000), BATCHES (1,64,1024), SECONDS_PER_ROW (2).
set -euo pipefail
a=${1:?TREE_A} b=${2:?TREE_B} dev=${3:?DEVICE} out=${4:?OUT}
docs=${5:-200000} queries=${6:-4000}
mkdir -p "$out"
for t in "$a" "$b"; do
  cmake -S "$t" -B "$t/build-cmp" -DCMAKE_BUILD_TYPE=Release -DCLSEARCH_TESTS=OFF -DCLSEARCH_CIFF=OFF -DCLSEARCH_SERVE=OFF >/dev/null
  cmake --build "$t/build-cmp" -j"$(nproc)" --target clsearch >/dev/null
done
idx=$out/cmp.idx topics=$out/cmp.tsv
[ -f "$idx" ] || "$b/build-cmp/clsearch" generate --index "$idx" --topics "$topics" --docs "$docs" --queries "$queries" -q
for round in 1 2; do
  for side in a b; do
    if [ $side = a ]; then t=$a; else t=$b; fi
    name=$side.$round
    # a tree unpacked from git archive names its commit in .commit
    echo "== $name: $t, commit $(cat "$t/.commit" 2>/dev/null || (cd "$t" && git rev-parse --short HEAD 2>/dev/null) || echo '?')"
    "$t/build-cmp/clsearch" bench e2e -x "$idx" -q "$topics" -d "$dev" -m "${MODES:-or,and}" -k "${KS:-10,1000}" \
      -b "${BATCHES:-1,64,1024}" --seconds "${SECONDS_PER_ROW:-2}" --json "$out/$name.jsonl" | tee "$out/$name.txt"
  done
done
