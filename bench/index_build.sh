#!/usr/bin/env bash
# Index build throughput: `clsearch index -v -c jsonl` on one JSONL collection (a generated one:
# `clsearch generate -o DIR --docs N` writes DIR/corpus.jsonl) with 1, 4 and 16 threads and the
# default memory budget, then the largest thread count again with a budget small enough to spill
# (MEMORY_MB). Prints per build the MB/s and tokens/s of the summary line, each stage's time and
# the peak memory, and checks that every build wrote the same bytes.
#   bash bench/index_build.sh BUILD_DIR JSONL OUTDIR
# Environment: THREADS (default "1 4 16"), MEMORY_MB (default 256; empty: no spilling run),
# KEEP=1 keeps the indexes (default: only the first, for the comparison). OUTDIR receives the
# indexes and each build's -v output (index-T[-mM].log); it needs room for two indexes.
set -euo pipefail
usage="usage: bash bench/index_build.sh BUILD_DIR JSONL OUTDIR"
build=${1:?$usage}
jsonl=${2:?$usage}
out=${3:?$usage}
cls=$build/clsearch
threads=${THREADS:-1 4 16}
memory=${MEMORY_MB-256}
[ -x "$cls" ] || { echo "no $cls: build first" >&2; exit 2; }
[ -f "$jsonl" ] || { echo "no $jsonl (clsearch generate -o DIR --docs N writes DIR/corpus.jsonl)" >&2; exit 2; }
mkdir -p "$out"
src=$(cd "$(dirname "$0")/.." && pwd)
echo "commit ${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $(du -m "$jsonl" | cut -f1) MB $jsonl"
cat "$jsonl" >/dev/null # the input in the page cache for every build alike

ref=
runs=()
for t in $threads; do runs+=("$t:"); done
last=${runs[${#runs[@]} - 1]%%:*}
[ -n "$memory" ] && runs+=("$last:$memory")
printf '%-22s %8s %9s  %s\n' build "MB/s" "Mtok/s" "stages (s) and peak memory"
for r in "${runs[@]}"; do
  t=${r%%:*} m=${r#*:}
  name=index-$t${m:+-m$m}
  args=(index -v -c jsonl --threads "$t" -o "$out/$name.idx")
  [ -n "$m" ] && args+=(--memory "$m")
  "$cls" "${args[@]}" "$jsonl" 2>"$out/$name.log" || { echo "$name failed:" >&2; tail -3 "$out/$name.log" >&2; exit 1; }
  # the summary line: "... in S s: X MB/s, Y M tokens/s, ..."
  mbs=$(sed -n 's/^indexed .*: \([0-9.]*\) MB\/s, \([0-9.]*\) M tokens\/s.*/\1/p' "$out/$name.log")
  tok=$(sed -n 's/^indexed .*: \([0-9.]*\) MB\/s, \([0-9.]*\) M tokens\/s.*/\2/p' "$out/$name.log")
  stages=$(awk '/^stage reading/ { printf "read+analyse %s", $(NF-1) }
    /^stage sorting runs/ { match($0, /: [0-9]+ runs?, [0-9]+ spilled \([0-9.]+ MB\), [0-9.]+ s/); s = substr($0, RSTART + 2, RLENGTH - 2);
                        w = $(NF-3); printf ", runs %s (waited %s)", s, w }
    /^stage analysis still/ { printf ", drain %s", $NF == "s" ? $(NF-1) : $NF }
    /^stage inversion/ { printf ", invert %s", $(NF-1) }
    /^stage merging/ { match($0, /: [0-9.]+ s on [0-9]+ threads?, [0-9]+ chunks?/); printf ", merge+encode %s", substr($0, RSTART + 2, RLENGTH - 2);
                       match($0, /merging [0-9.]+ s, encoding [0-9.]+ s/); printf " (%s thread-s)", substr($0, RSTART, RLENGTH) }
    /^stage layout/ { printf ", layout %s", $(NF-1) }
    /^stage writing/ { printf ", write %s", $(NF-1) }
    /^peak memory/ { printf ", peak %s MB", $3 }' "$out/$name.log")
  printf '%-22s %8s %9s  %s\n' "$name" "$mbs" "$tok" "$stages"
  if [ -z "$ref" ]; then
    ref=$out/$name.idx
  else
    cmp -s "$ref" "$out/$name.idx" || { echo "$name.idx differs from $(basename "$ref")" >&2; exit 1; }
    [ "${KEEP:-0}" = 1 ] || rm -f "$out/$name.idx"
  fi
done
echo "every build wrote the same $(du -m "$ref" | cut -f1) MB index; -v output in $out/index-*.log"
