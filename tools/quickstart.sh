#!/usr/bin/env bash
# The main job on the embedded default collection: install what is missing, build, generate
# the default collection, index it, run its queries on every OpenCL device and on the
# reference engine, and show a few results, queries per second, and whether each device's
# results equal the reference's (same docIDs in the same order, scores within 1e-5).
#   tools/quickstart.sh [--docs N] [--queries N] [-k K] [-m and|or]
set -euo pipefail
cd "$(dirname "$0")/.."
docs=20000 queries=1000 k=1000 mode=or
while [ $# -gt 0 ]; do
  case "$1" in
    --docs) docs=$2; shift 2 ;;
    --queries) queries=$2; shift 2 ;;
    -k) k=$2; shift 2 ;;
    -m) mode=$2; shift 2 ;;
    *) echo "usage: $0 [--docs N] [--queries N] [-k K] [-m and|or]" >&2; exit 2 ;;
  esac
done
tools/deps.sh
build=${CLSEARCH_BUILD_DIR:-build}
# The same folder, build type and options as tools/test.sh, so that either script may run first
# and neither undoes the other: the tests are configured (not built here), so a later
# tools/test.sh in build/ finds and runs all of them.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_TESTS=ON -DCLSEARCH_CIFF=ON \
  -DCLSEARCH_SANITIZE=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target clsearch >/dev/null
cls=$build/clsearch
work=$build/quickstart
mkdir -p "$work"

echo "== generating the default collection: $docs documents, $queries queries (seed 42)"
"$cls" generate -o "$work/collection" --docs "$docs" --queries "$queries"
echo "== indexing"
"$cls" index -c jsonl -o "$work/default.idx" "$work/collection/corpus.jsonl" -v
"$cls" stats "$work/default.idx" | sed 's/^/   /'
echo "== devices"
"$cls" devices | sed 's/^/   /'
mapfile -t devs < <("$cls" devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p')

declare -A qps match
run() { # device
  local log=$work/search.$1.log
  if ! "$cls" search -x "$work/default.idx" -q "$work/collection/topics.tsv" -k "$k" -m "$mode" \
       -d "$1" -o "$work/run.$1" -v 2>"$log"; then
    cat "$log" >&2
    qps[$1]="failed"; match[$1]="-"; return
  fi
  grep -E '^device:' "$log" | sed 's/^/   /' || true
  qps[$1]=$(sed -n 's/.* s: \([0-9.]*\) queries\/s.*/\1/p' "$log")
}
echo "== searching ($mode, k $k)"
run ref
for d in "${devs[@]}"; do
  run "$d"
  if [ "${qps[$d]}" != failed ]; then
    if "$cls" compare "$work/run.ref" "$work/run.$d" >/dev/null; then match[$d]=yes; else match[$d]=NO; fi
  fi
done
echo "== top results of the first three queries (reference engine)"
head -3 "$work/collection/topics.tsv" | while IFS=$'\t' read -r qid text; do
  echo "   $qid: $text"
  awk -v q="$qid" '$1 == q && $4 <= 3 { printf "      %d. %-12s %s\n", $4, $3, $5 }' "$work/run.ref"
done
echo "== summary (queries/s include each engine's first-use costs; bench/ has the careful figures)"
printf '   %-8s %12s  %s\n' device "queries/s" "matches ref"
printf '   %-8s %12s  %s\n' ref "${qps[ref]}" "(oracle)"
status=0
for d in "${devs[@]}"; do
  printf '   %-8s %12s  %s\n' "$d" "${qps[$d]}" "${match[$d]}"
  [ "${match[$d]}" = yes ] || status=1
done
[ ${#devs[@]} -gt 0 ] || echo "   (no OpenCL device found: only the reference engine ran)"
exit $status
