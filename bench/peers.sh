#!/usr/bin/env bash
# Peers in one run, on one corpus, its topics and one BM25 k1 and b: clsearch (the plain-C
# reference engine and the OpenCL devices given, e.g. POCL, the multi-threaded CPU path, or a
# GPU) and Xapian (Debian's libxapian, through bench/peer_xapian). Prints one table: indexing
# MB/s, queries per second and top-10 overlap, each also as a ratio taken in this run.
#
#   bench/peers.sh [-B BUILD] [-d DEVICES] [-k K[,K...]] [-K K1] [-b B] [-n REPEATS]
#                  [-g DOCS] [-c FORMAT -q TOPICS [-j QRELS] CORPUS] [-o OUTDIR] [-X] [-D]
#
#   -B BUILD    CMake build folder (default build-peers, in the current folder); configured
#               Release, without tests and CIFF, and only clsearch, bench_qps, peer_xapian built
#   -d DEVICES  comma list of clsearch devices besides "ref" (default auto: the first GPU, else
#               the first CPU device; "cpu", "gpu", "P:D" as `clsearch devices` lists them)
#   -k K        hits per query, a comma list: queries/s for each; the runs, the overlap and MAP
#               use the largest (default 1000, as Anserini's regressions; at least 10)
#   -K K1 -b B  BM25 parameters of the runs (default 0.9 and 0.4, CACM's reference setting)
#   -n REPEATS  timed repeats, median reported (default 3)
#   -g DOCS     a generated collection of DOCS documents and 1000 queries (`clsearch generate`)
#               instead of CACM
#   CORPUS      another collection: -c {jsonl,beir,html,trec,smart,files} and -q TOPICS needed,
#               -j QRELS (qid iter docno rel) optional
#   -o OUTDIR   also keep the table, run files and logs there (replaced only when complete)
#   -X          leave Xapian out
#   -D          diagnostics: Xapian also with clsearch's own analyzer (a second Xapian index), and
#               both Xapian indexes also scored with clsearch's formula (Lucene's idf)
# Default corpus: CACM from $CLS_DATA_DIR (default ../shared/data beside the repository).
#
# Measured, median of REPEATS, all in this run on this host:
#   indexing   wall seconds of each command, start to written index (both engines fsync what
#              they write), over the bytes of document text the readers hand over (both engines
#              read through clsearch's corpus readers; MB = 10^6 bytes). clsearch with 1 thread
#              and with all cores; Xapian has one.
#   queries/s  topics / time of a whole pass over them. Xapian runs them one after another in
#              one thread (bench/peer_xapian: a warm-up pass, then timed passes); clsearch runs
#              every topic in one cls_engine_search call, as it is built to (bench_qps: warm-up,
#              timed repeats, results checked against the reference engine).
#   latency    one query run alone, percentiles in ms. Xapian: each query of its timed passes;
#              clsearch: `clsearch bench e2e -b 1` (one query per call, up to 1000 calls or 5 s).
#              Queries are analysed outside every timing. bench_qps and bench e2e score at k1
#              0.9, b 0.4 whatever -K and -b say (the index's block maxima are for those).
#   overlap    top 10 of two run files: mean over topics of |A & B| / min(10, max(|A|, |B|))
#              (that is / 10 when either has ten), and how many top-10 lists are identical.
#   MAP        with QRELS: mean average precision at the largest K over the judged topics with
#              a relevant document (rank order as written; trec_eval's tie order may differ).
#
# Dependencies: tools/deps.sh installs what is missing (as root with apt-get), libxapian-dev and
# g++ included unless -X; otherwise it names what is missing and this exits 1. On a prepared
# host without a package registry (CLSEARCH_NO_DEPS=1, as bench/gpu_session.sh sets), a missing
# Xapian is skipped with a message and the rest is still reported.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=build-peers devices=auto ks=1000 k1=0.9 bb=0.4 repeats=3 gen='' fmt='' topics='' qrels='' outdir=''
xapian=1 diag=0
usage() { sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while getopts B:d:k:K:b:n:g:c:q:j:o:XDh opt; do
  case $opt in
    B) build=$OPTARG ;; d) devices=$OPTARG ;; k) ks=$OPTARG ;; K) k1=$OPTARG ;; b) bb=$OPTARG ;;
    n) repeats=$OPTARG ;; g) gen=$OPTARG ;; c) fmt=$OPTARG ;; q) topics=$OPTARG ;; j) qrels=$OPTARG ;;
    o) outdir=$OPTARG ;; X) xapian=0 ;; D) diag=1 ;; *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
case $repeats in '' | *[!0-9]* | 0) echo "peers.sh: -n takes a positive number" >&2; exit 2 ;; esac
case ,$ks, in *,,* | *[!0-9,]*) echo "peers.sh: -k takes a comma list of numbers" >&2; exit 2 ;; esac
kmax=$(tr , '\n' <<<"$ks" | sort -n | tail -1)
[ "$kmax" -ge 10 ] || { echo "peers.sh: the largest -k must be at least 10 (top-10 overlap)" >&2; exit 2; }
data=${CLS_DATA_DIR:-$src/../shared/data}
if [ $# -eq 1 ]; then
  corpus=$1 name=$(basename "$1")
  if [ -z "$fmt" ] || [ -z "$topics" ]; then echo "peers.sh: CORPUS needs -c FORMAT and -q TOPICS" >&2; exit 2; fi
  if [ -n "$gen" ]; then echo "peers.sh: -g and CORPUS exclude each other" >&2; exit 2; fi
elif [ -z "$gen" ]; then
  corpus=$data/cacm/cacm.tar.gz fmt=html topics=$data/cacm/topics.cacm.txt name=CACM
  qrels=${qrels:-$data/cacm/qrels.cacm.txt}
  [ -f "$corpus" ] || { echo "peers.sh: $corpus is absent (set CLS_DATA_DIR)" >&2; exit 1; }
fi
say() { echo "peers.sh: $*" >&2; }
if [ -n "$outdir" ] && [ -e "$outdir" ] && [ ! -f "$outdir/table.txt" ]; then
  say "$outdir exists and holds no table.txt of an earlier run: not replaced"
  exit 2
fi

# ---- dependencies and build ------------------------------------------------------------------
have_xapian() { pkg-config --exists xapian-core 2>/dev/null || command -v xapian-config >/dev/null 2>&1; }
have_cxx() { command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1; }
extra=
if [ $xapian = 1 ] && ! { have_xapian && have_cxx; }; then extra="libxapian-dev g++"; fi
# shellcheck disable=SC2086
if ! sh "$src/tools/deps.sh" $extra; then
  [ -n "$extra" ] && say "(-X leaves Xapian out)"
  exit 1
fi
xapian_note=
if [ $xapian = 1 ] && ! { have_xapian && have_cxx; }; then
  if [ "${CLSEARCH_NO_DEPS:-0}" != 1 ]; then
    say "Xapian or a C++ compiler is still not found (pkg-config xapian-core, xapian-config, c++); -X leaves Xapian out"
    exit 1
  fi
  xapian=0 xapian_note="Xapian skipped: libxapian-dev or g++ is not installed on this host (CLSEARCH_NO_DEPS=1)"
  say "$xapian_note"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/peers.XXXXXX")
stage=
trap 'rm -rf "$work"; [ -z "$stage" ] || rm -rf "$stage"' EXIT
mkdir "$work/out"
log=$work/out/logs
mkdir "$log"
say "building in $build"
if ! cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLSEARCH_TESTS=OFF -DCLSEARCH_CIFF=OFF -DCLSEARCH_SERVE=OFF \
    >"$log/cmake.log" 2>&1; then
  cat "$log/cmake.log" >&2
  exit 1
fi
targets="clsearch bench_qps"
[ $xapian = 1 ] && targets="$targets peer_xapian"
# shellcheck disable=SC2086
if ! cmake --build "$build" -j"$(nproc)" --target $targets >"$log/build.log" 2>&1; then
  grep -E "error|Error" "$log/build.log" >&2 || tail -20 "$log/build.log" >&2
  exit 1
fi
cls=$build/clsearch bq=$build/bench/bench_qps px=$build/bench/peer_xapian
if [ $xapian = 1 ] && [ ! -x "$px" ]; then
  say "CMake did not build peer_xapian although Xapian is installed; see $build/CMakeCache.txt"
  exit 1
fi

# ---- helpers ------------------------------------------------------------------------------
# timed LOG CMD...: runs CMD with its output in LOG; prints its wall seconds. Stops on failure.
timed() {
  local out=$1 t0 t1
  shift
  t0=$(date +%s%N)
  if ! "$@" >"$out" 2>&1; then
    say "failed: $*"
    tail -20 "$out" >&2
    return 1
  fi
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.4f\n", ns / 1e9 }'
}
# run LOG CMD...: runs CMD with its output in LOG; on failure shows the log's end and stops.
run() {
  local out=$1
  shift
  if ! "$@" >"$out" 2>&1; then
    say "failed: $*"
    tail -20 "$out" >&2
    return 1
  fi
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# overlap RUN_A RUN_B: "mean-overlap identical/topics" over the top 10 of each topic.
overlap() {
  awk '
    FNR == 1 { f++ }
    $4 + 0 >= 1 && $4 + 0 <= 10 {
      q[$1] = 1
      if (f == 1) { a[$1, $3] = 1; na[$1]++; ra[$1, $4 + 0] = $3 }
      else { nb[$1]++; rb[$1, $4 + 0] = $3; if (($1, $3) in a) inter[$1]++ }
    }
    END {
      for (t in q) {
        n++
        den = na[t] > nb[t] ? na[t] : nb[t]
        s += den ? inter[t] / den : 1
        same = na[t] == nb[t]
        for (r = 1; same && r <= na[t]; r++) same = ra[t, r] == rb[t, r]
        ident += same
      }
      if (n) printf "%.4f %d/%d\n", s / n, ident, n; else print "- 0/0"
    }' "$1" "$2"
}
# map QRELS RUN: mean average precision over judged topics with a relevant document that the run
# answers (as trec_eval averages), in the run's rank order.
map() {
  awk '
    FNR == 1 { f++ }
    f == 1 && NF >= 4 && $4 + 0 > 0 { rel[$1, $3] = 1; nrel[$1]++; next }
    f == 2 && ($1 in nrel) {
      seen[$1] = 1
      if (($1, $3) in rel) { hit[$1]++; sum[$1] += hit[$1] / ($4 + 0) }
    }
    END { for (t in seen) { n++; s += sum[t] / nrel[t] } if (n) printf "%.4f\n", s / n; else print "-" }
  ' "$1" "$2"
}
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" "$2" | head -1; }

# ---- corpus -------------------------------------------------------------------------------
if [ -n "$gen" ]; then
  say "generating $gen documents"
  run "$log/generate.log" "$cls" generate -o "$work/gen" --docs "$gen" --queries 1000
  corpus=$work/gen/corpus.jsonl fmt=jsonl topics=$work/gen/topics.tsv name="generated $gen"
fi
[ -z "$qrels" ] || [ -f "$qrels" ] || { say "$qrels is absent"; exit 1; }

# ---- indexing -------------------------------------------------------------------------------
cores=$(nproc)
say "indexing $name ($repeats repeats)"
t_c1='' t_cn='' t_x=''
for r in $(seq "$repeats"); do
  t_c1="$t_c1 $(timed "$log/index-clsearch-1.log" "$cls" index -v --threads 1 -c "$fmt" -o "$work/c.idx" "$corpus")"
  [ "$cores" -gt 1 ] && t_cn="$t_cn $(timed "$log/index-clsearch-n.log" "$cls" index -v -c "$fmt" -o "$work/cn.idx" "$corpus")"
  [ $xapian = 1 ] && t_x="$t_x $(timed "$log/index-xapian.log" "$px" index -c "$fmt" "$work/x.xdb" "$corpus")"
  : "$r"
done
# shellcheck disable=SC2086
{ s_c1=$(median $t_c1); s_cn=$( [ -n "$t_cn" ] && median $t_cn || echo ""); s_x=$( [ -n "$t_x" ] && median $t_x || echo ""); }
"$cls" stats "$work/c.idx" >"$log/stats.txt"
docs=$(awk '$1 == "documents" { print $2 }' "$log/stats.txt")
c_terms=$(awk '$1 == "terms" { print $2 }' "$log/stats.txt")
c_tokens=$(awk '$1 == "tokens" { print $2 }' "$log/stats.txt")
approx=''
if [ $xapian = 1 ]; then
  bytes=$(field text_bytes "$log/index-xapian.log")
  x_terms=$(field terms "$log/index-xapian.log") x_tokens=$(field tokens "$log/index-xapian.log")
  x_ver=$(field xapian "$log/index-xapian.log")
else # clsearch prints MB of text with one decimal
  approx='about '
  bytes=$(sed -n 's/.*(\([0-9.]*\) MB of text).*/\1/p' "$log/index-clsearch-1.log" | awk '{ printf "%.0f", $1 * 1e6 }')
fi
mbs() { awk -v b="$bytes" -v s="$1" 'BEGIN { if (s == "") print "-"; else printf "%.2f", b / 1e6 / s }'; }

# ---- runs -----------------------------------------------------------------------------------
say "runs at k $kmax, k1 $k1, b $bb"
nq=0
run_opts=(-k "$kmax" --k1 "$k1" --b "$bb")
run "$log/search-ref.log" "$cls" search -x "$work/c.idx" -q "$topics" -d ref "${run_opts[@]}" -o "$work/out/clsearch-ref.run"
IFS=, read -r -a devs <<<"$devices"
for d in "${devs[@]}"; do
  run "$log/search-${d//:/_}.log" "$cls" search -x "$work/c.idx" -q "$topics" -d "$d" "${run_opts[@]}" \
    -o "$work/out/clsearch-${d//:/_}.run"
done
declare -A xq xl
if [ $xapian = 1 ]; then
  for k in ${ks//,/ }; do
    run "$log/search-xapian-k$k.log" "$px" search -r "$repeats" -o "$work/out/xapian-k$k.run" "$work/x.xdb" \
      "$topics" "$k" "$k1" "$bb"
    xq[$k]=$(field qps_median "$log/search-xapian-k$k.log")
    xl[$k]="$(field p50_ms "$log/search-xapian-k$k.log") $(field p95_ms "$log/search-xapian-k$k.log") $(field p99_ms "$log/search-xapian-k$k.log")"
  done
  nq=$(field queries "$log/search-xapian-k$kmax.log")
  mv "$work/out/xapian-k$kmax.run" "$work/out/xapian.run"
  rm -f "$work/out"/xapian-k*.run
  run "$log/search-xapian-lucene.log" "$px" search -r 1 --weight lucene -o "$work/out/xapian-lucene-idf.run" \
    "$work/x.xdb" "$topics" "$kmax" "$k1" "$bb"
  if [ $diag = 1 ]; then
    say "diagnostics: Xapian with clsearch's analyzer"
    run "$log/index-xapian-clsanalyzer.log" "$px" index --analyzer clsearch -c "$fmt" "$work/xc.xdb" "$corpus"
    run "$log/search-xapian-clsanalyzer.log" "$px" search -r 1 -o "$work/out/xapian-clsanalyzer.run" \
      "$work/xc.xdb" "$topics" "$kmax" "$k1" "$bb"
    run "$log/search-xapian-clsanalyzer-lucene.log" "$px" search -r 1 --weight lucene \
      -o "$work/out/xapian-clsanalyzer-lucene-idf.run" "$work/xc.xdb" "$topics" "$kmax" "$k1" "$bb"
  fi
fi

# ---- clsearch throughput ---------------------------------------------------------------------
say "clsearch queries/s ($repeats repeats) and single-query latency"
rc_qps=0
for k in ${ks//,/ }; do
  "$bq" -x "$work/c.idx" -q "$topics" -d "ref,$devices" -m or -k "$k" -r "$repeats" >"$log/bench_qps-k$k.log" 2>&1 ||
    rc_qps=1
done
run "$log/bench_e2e.log" "$cls" bench e2e -x "$work/c.idx" -q "$topics" -d "ref,$devices" -m or -k "$ks" -b 1 \
  --seconds 5
[ "$nq" != 0 ] || nq=$(awk 'NR == 1 { for (i = 1; i < NF; i++) if ($(i + 1) == "queries") print $i }' "$log/bench_qps-k$kmax.log")

# ---- the table ------------------------------------------------------------------------------
commit=${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
{
  echo "peers: $name, $docs documents, ${approx}$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }') MB of text, $nq topics; BM25 k1 $k1 b $bb; OR; median of $repeats"
  echo "host $(uname -n), $cores cores ($cpu), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?) at the end; commit $commit; $(date -u +%Y-%m-%dT%H:%MZ)${x_ver:+; Xapian $x_ver}"
  if [ -n "$xapian_note" ]; then echo "$xapian_note"; elif [ $xapian = 0 ]; then echo "Xapian left out (-X)"; fi
  echo
  echo "indexing (wall time, start to written index; MB/s of document text)"
  printf '  %-34s %9s %9s %12s\n' engine seconds MB/s "vs xapian"
  if [ $xapian = 1 ]; then printf '  %-34s %9s %9s %12s\n' "xapian (1 thread)" "$s_x" "$(mbs "$s_x")" 1.00; fi
  printf '  %-34s %9s %9s %12s\n' "clsearch (1 thread)" "$s_c1" "$(mbs "$s_c1")" "$(ratio "$s_x" "$s_c1")"
  if [ -n "$s_cn" ]; then printf '  %-34s %9s %9s %12s\n' "clsearch ($cores threads)" "$s_cn" "$(mbs "$s_cn")" "$(ratio "$s_x" "$s_cn")"; fi
  echo "  analysis check: clsearch $c_terms terms, $c_tokens tokens${x_terms:+; xapian $x_terms terms, $x_tokens tokens}"
  echo
  if [ "$k1" != 0.9 ] || [ "$bb" != 0.4 ]; then
    echo "note: clsearch's queries/s and latency are measured at k1 0.9 b 0.4 (bench_qps and bench e2e take no k1, b)"
  fi
  echo "throughput, OR: queries/s = topics / time of a pass (xapian: one query after another, 1 thread;"
  echo "clsearch: every topic in one batch, one cls_engine_search call)"
  printf '  %-34s %6s %11s %10s  %s\n' engine k queries/s "vs xapian" "results vs ref"
  for k in ${ks//,/ }; do
    if [ $xapian = 1 ]; then printf '  %-34s %6s %11s %10s  %s\n' xapian "$k" "${xq[$k]}" 1.00 -; fi
    for d in ref "${devs[@]}"; do
      all=$(awk -v d="$d" '$1 == d && NF >= 6 { print $2; exit }' "$log/bench_qps-k$k.log")
      verdict=$(awk -v d="$d" '$1 == d && NF >= 6 { print $6; exit }' "$log/bench_qps-k$k.log")
      printf '  %-34s %6s %11s %10s  %s\n' "clsearch $d" "$k" "${all:--}" "$(ratio "$all" "${xq[$k]:-}")" "${verdict:-failed}"
    done
  done
  echo
  echo "latency of one query run alone, ms (xapian: every query of its timed passes; clsearch: bench e2e, batch of 1)"
  printf '  %-34s %6s %9s %9s %9s %14s\n' engine k p50 p95 p99 "p50 vs xapian"
  for k in ${ks//,/ }; do
    xp50=''
    if [ $xapian = 1 ]; then
      read -r xp50 xp95 xp99 <<<"${xl[$k]}"
      printf '  %-34s %6s %9s %9s %9s %14s\n' xapian "$k" "$xp50" "$xp95" "$xp99" 1.00
    fi
    for d in ref "${devs[@]}"; do
      read -r p50 p95 p99 <<<"$(awk -v d="$d" -v k="$k" '$1 == d && $2 == "or" && $3 == k && $4 == 1 { print $7, $8, $9; exit }' "$log/bench_e2e.log")"
      printf '  %-34s %6s %9s %9s %9s %14s\n' "clsearch $d" "$k" "${p50:--}" "${p95:--}" "${p99:--}" "$(ratio "$xp50" "${p50:-}")"
    done
  done
  for d in ref "${devs[@]}"; do
    desc=$(awk -v d="$d" '$1 == d && NF >= 7 { $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ +/, ""); print; exit }' "$log/bench_qps-k$kmax.log")
    echo "  clsearch $d: $desc"
  done
  echo
  echo "top-10 overlap (mean over topics of |A & B| / 10; identical top-10 lists), run files at k $kmax"
  printf '  %-26s %-36s %8s %12s\n' A B overlap identical
  ref=$work/out/clsearch-ref.run
  row() {
    local ov
    ov=$(overlap "$3" "$4")
    printf '  %-26s %-36s %8s %12s\n' "$1" "$2" "${ov% *}" "${ov#* }"
  }
  if [ $xapian = 1 ]; then
    row "clsearch ref" "xapian" "$ref" "$work/out/xapian.run"
    row "clsearch ref" "xapian, Lucene idf (diagnostic)" "$ref" "$work/out/xapian-lucene-idf.run"
    if [ $diag = 1 ]; then
      row "clsearch ref" "xapian, clsearch analyzer (diag.)" "$ref" "$work/out/xapian-clsanalyzer.run"
      row "clsearch ref" "xapian, both (diagnostic)" "$ref" "$work/out/xapian-clsanalyzer-lucene-idf.run"
    fi
  fi
  for d in "${devs[@]}"; do row "clsearch ref" "clsearch $d" "$ref" "$work/out/clsearch-${d//:/_}.run"; done
  if [ -n "$qrels" ]; then
    echo
    echo "MAP at k $kmax ($(basename "$qrels"))"
    for r in "$work"/out/*.run; do printf '  %-40s %s\n' "$(basename "$r" .run)" "$(map "$qrels" "$r")"; done
  fi
} >"$work/out/table.txt"
[ $rc_qps = 0 ] || say "bench_qps reported a failure or a result that differs from the reference engine: see the table"

if [ -n "$outdir" ]; then
  stage=$outdir.tmp.$$
  rm -rf "$stage"
  mv "$work/out" "$stage"
  rm -rf "$outdir"
  mv "$stage" "$outdir"
  stage=
  cat "$outdir/table.txt"
else
  cat "$work/out/table.txt"
fi
exit $rc_qps
