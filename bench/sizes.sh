#!/usr/bin/env bash
# Bits per docID and per frequency of every codec and block size, per collection: CACM, the
# three SMART collections, a large real corpus (any folder tree or archive of text given as
# LARGE, e.g. the linux-source-6.1 tarball) and the generated default collection.
#   bench/sizes.sh BUILD_DIR [LARGE]
# Each collection is indexed once (bp, block 128); `clsearch stats --codecs` re-encodes it in
# every codec and block size. Prints one `stats --codecs` table per collection.
set -euo pipefail
build=${1:?usage: bench/sizes.sh BUILD_DIR [LARGE]}
large=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
cls=$build/clsearch
data=${CLS_DATA_DIR:-$src/../shared/data}
out=$build/bench/sizes
mkdir -p "$out"
echo "commit ${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n)"
one() { # name format input...
  local name=$1 fmt=$2
  shift 2
  [ -f "$out/$name.idx" ] || "$cls" index -q -c "$fmt" -o "$out/$name.idx" "$@"
  echo "== $name"
  "$cls" stats "$out/$name.idx" --codecs | sed -n '1,3p;/^codec /,$p'
}
[ -f "$data/cacm/cacm.tar.gz" ] && one cacm html "$data/cacm/cacm.tar.gz"
[ -f "$data/cranfield/cran.all.1400" ] && one cranfield smart "$data/cranfield/cran.all.1400"
[ -f "$data/med/MED.ALL" ] && one med smart "$data/med/MED.ALL"
[ -f "$data/cisi/CISI.ALL" ] && one cisi smart "$data/cisi/CISI.ALL"
[ -f "$out/gen/corpus.jsonl" ] || "$cls" generate -o "$out/gen" --docs 20000 --queries 10 >/dev/null
one generated-20k jsonl "$out/gen/corpus.jsonl"
[ -n "$large" ] && one "$(basename "$large")" files "$large"
exit 0
