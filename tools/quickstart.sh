#!/usr/bin/env bash
# The main job on the embedded default collection: install what is missing, build, generate
# the default collection, index it, compile the kernels for every OpenCL device, run its queries
# on every device and on the reference engine, and show a few results, queries per second, and
# whether each device's results equal the reference's (same docIDs in the same order, scores
# within 1e-5). Also makes build/venv, a Python virtual environment with the bindings installed,
# for the README's Python line. A line per phase; each engine's figures are taken after its
# kernels were compiled (the compile's own time is shown apart).
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
t0=$SECONDS
phase() { printf '== %s  [%ds]\n' "$1" $((SECONDS - t0)); }

phase "installing what is missing (tools/deps.sh; nothing when all is there)"
tools/deps.sh
build=${CLSEARCH_BUILD_DIR:-build}
phase "building the command and the library ($build/)"
# The same folder, build type and options as tools/test.sh, so that either script may run first
# and neither undoes the other: the tests are configured (not built here), so a later
# tools/test.sh in build/ finds and runs all of them.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_TESTS=ON -DCLSEARCH_CIFF=ON \
         -DCLSEARCH_SANITIZE=OFF && cmake --build "$build" -j"$(nproc)" --target clsearch clsearch_shared clsearch_static; } >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
cls=$build/clsearch
work=$build/quickstart
mkdir -p "$work"

phase "generating the default collection: $docs documents, $queries queries (seed 42)"
"$cls" generate -o "$work/collection" --docs "$docs" --queries "$queries"
phase "indexing"
"$cls" index -c jsonl -o "$work/default.idx" "$work/collection/corpus.jsonl" 2>&1 | sed 's/^/   /'
"$cls" stats "$work/default.idx" | sed -n '1,11p' | sed 's/^/   /'
phase "OpenCL devices"
"$cls" devices | sed 's/^/   /'
mapfile -t devs < <("$cls" devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p')

declare -A qps match compile
search() { # device log: one search of the topics on the device, its -v account in the log
  "$cls" search -x "$work/default.idx" -q "$work/collection/topics.tsv" -k "$k" -m "$mode" -d "$1" \
    -o "$work/run.$1" -v 2>"$2"
}
if [ ${#devs[@]} -gt 0 ]; then
  phase "compiling the kernels for each device (once: later starts load them from the cache)"
fi
for d in "${devs[@]}"; do
  # the first search on a device compiles its kernels; its figures are not the engine's
  if search "$d" "$work/search.$d.first.log"; then
    grep -E '^clsearch: compiling kernels' "$work/search.$d.first.log" | sed 's/^clsearch: /   /' || true
    compile[$d]=$(sed -n 's/^engine start-up \([0-9.]*\) s.*/\1/p' "$work/search.$d.first.log")
    echo "   $d: engine start-up ${compile[$d]:-?} s (its first start here: it compiles what no cache holds)"
  else
    sed 's/^/   /' "$work/search.$d.first.log" >&2
    compile[$d]=failed
  fi
done

phase "searching ($mode, k $k): the reference engine, then each device with its kernels built"
run() { # device
  local log=$work/search.$1.log
  if [ "${compile[$1]:-}" = failed ] || ! search "$1" "$log"; then
    [ -f "$log" ] && sed 's/^/   /' "$log" >&2
    qps[$1]="failed"; match[$1]="-"; return
  fi
  grep -E '^device:' "$log" | sed 's/^/   /' || true
  qps[$1]=$(sed -n 's/.* s: \([0-9.]*\) queries\/s.*/\1/p' "$log")
}
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

# The README's Python line runs in this venv: Debian 12's python3 refuses a system-wide pip
# install (PEP 668). Debian's own packages stay visible (pandas); pip takes setuptools from
# Debian's wheels, offline.
phase "Python bindings: $build/venv (python3 -m venv), clsearch installed in it"
venv=$build/venv
py=/usr/bin/python3 # Debian's, which sees Debian's packages, before another python3 on PATH
[ -x "$py" ] || py=python3
if ! { { [ -x "$venv/bin/python" ] || "$py" -m venv --system-site-packages "$venv"; } &&
       "$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links /usr/share/python-wheels ./python; } \
     >"$log" 2>&1; then
  cat "$log" >&2
  echo "   the bindings did not install (above); the rest stands" >&2
fi

echo "== summary (queries/s of a second search, the kernels built; bench/ has the careful figures)"
printf '   %-8s %12s  %-12s %s\n' device "queries/s" "matches ref" "first start (compile)"
printf '   %-8s %12s  %-12s %s\n' ref "${qps[ref]}" "(oracle)" "-"
status=0
for d in "${devs[@]}"; do
  c=${compile[$d]}
  [ "$c" = failed ] || c="$c s"
  printf '   %-8s %12s  %-12s %s\n' "$d" "${qps[$d]}" "${match[$d]}" "$c"
  [ "${match[$d]}" = yes ] || status=1
done
[ ${#devs[@]} -gt 0 ] || echo "   (no OpenCL device found: only the reference engine ran)"
echo "   done in $((SECONDS - t0)) s"
exit $status
