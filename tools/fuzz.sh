#!/usr/bin/env bash
# Coverage-guided fuzzing of the input readers (fuzz/): builds every libFuzzer harness with
# clang, ASan and UBSan into build-fuzz/, seeds each from small slices of ../shared/data (and
# generated inputs when it is absent) plus its kept inputs under tests/fuzz/<name>, and runs
# each for SECONDS. Exits non-zero on any crash, leak, timeout or out-of-memory; the input that
# did it is left in build-fuzz/crashes/. Prints one line per harness: runs, coverage (cov) and
# features (ft) as libFuzzer counts them (docs/FUZZING.md).
#   tools/fuzz.sh [-j WORKERS] SECONDS [HARNESS...]      (default: one worker, every harness)
# With -j, WORKERS processes fuzz each harness at once over its one corpus (libFuzzer re-reads
# what the others add); runs are summed over them, and the corpus is then merged down to the
# inputs that keep its coverage (cov and ft are that merged corpus's).
set -euo pipefail
cd "$(dirname "$0")/.."
workers=1
if [ "${1:-}" = -j ]; then
  workers=${2:?usage: tools/fuzz.sh [-j WORKERS] SECONDS [HARNESS...]}
  shift 2
fi
secs=${1:?usage: tools/fuzz.sh [-j WORKERS] SECONDS [HARNESS...]}
shift
case "$workers$secs" in *[!0-9]*) echo "fuzz: WORKERS and SECONDS are whole numbers" >&2; exit 2 ;; esac
# clang and its sanitizer and fuzzer runtimes: only this script needs them.
tools/deps.sh clang-14 libclang-rt-14-dev
cc=$(command -v clang-14 || command -v clang)
cxx=$(command -v clang++-14 || command -v clang++) # the library's one C++ file (clx_guard.cpp) too
data=../shared/data
out=build-fuzz
cmake -S . -B $out -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_FUZZ=ON \
  -DCLSEARCH_TESTS=OFF -DCLSEARCH_SERVE=OFF -DCLSEARCH_CIFF=ON -DCLSEARCH_SANITIZE=OFF >/dev/null
cmake --build $out -j2 --target fuzz_all >/dev/null

all="index corpus_jsonl corpus_beir corpus_trec corpus_smart corpus_html corpus_files topics ciff tuning rank"
targets=${*:-$all}

# ---- Seeds: data slices where ../shared/data has them, small generated inputs always ----------
seeds=$out/seeds
rm -rf "$seeds"
for t in $all; do mkdir -p "$seeds/$t"; done
gen() { printf '%b' "$2" >"$seeds/$1"; }
gen corpus_jsonl/gen.jsonl '{"id": "d1", "contents": "alpha beta gamma"}\n{"id": "d2", "contents": "beta \\u00e9t\\u00e9 delta"}\n'
gen corpus_beir/gen.jsonl '{"_id": "d1", "title": "Alpha", "text": "beta gamma"}\n{"_id": "d2", "title": "", "text": "delta", "metadata": {}}\n'
gen corpus_trec/gen.trec '<DOC>\n<DOCNO> d1 </DOCNO>\n<TEXT>alpha <b>beta</b> gamma</TEXT>\n</DOC>\n<DOC><DOCNO>d2</DOCNO>delta</DOC>\n'
gen corpus_smart/gen.all '.I 1\n.T\nalpha beta\n.A\nsomeone\n.W\ngamma delta\n.I 2\n.W\nepsilon\n'
gen corpus_html/gen.html '<html><head><title>Alpha</title><script>x()</script></head><body><p>beta &amp; gamma &#233;</p></body></html>\n'
gen corpus_files/gen.txt 'alpha beta gamma\ndelta\n'
gen topics/gen.tsv '1\talpha beta\n2\tgamma\n'
gen topics/gen.trec '<top>\n<num> Number: 301\n<title> alpha beta\n<desc> Description:\nx\n</top>\n'
gen topics/gen.anserini '<DOC>\n<DOCNO> 1 </DOCNO>\nalpha beta\n</DOC>\n'
gen topics/gen.smart '.I 1\n.W\nalpha beta\n.I 2\n.W\ngamma\n'
gen topics/gen.mq '20001:1:alpha beta\n20002:1:gamma\n'
gen tuning/gen.json '{"devices": [{"device": "fuzz device", "driver": "1.0", "tuned": "2026-01-01", "params": {"WG_INTERSECT": 64, "WG_TOPK": 128}}]}\n'
gen rank/gen.svm '1 qid:1 1:0.5 2:nan 7:-3e2 # a document\n0 2:1\n'
# A tar of a few files, for the archive paths of the folder-tree readers.
mkdir -p $out/tar-src && printf 'alpha beta\n' >$out/tar-src/a.txt && printf '<p>gamma</p>\n' >$out/tar-src/b.html
tar -C $out/tar-src -cf "$seeds/corpus_files/gen.tar" a.txt b.html
cp "$seeds/corpus_files/gen.tar" "$seeds/corpus_html/gen.tar"
gzip -c "$seeds/corpus_trec/gen.trec" >"$seeds/corpus_trec/gen.trec.gz"
if [ -d "$data" ]; then
  slice() { [ -f "$data/$2" ] && head -c "${4:-4096}" "$data/$2" >"$seeds/$1/$3" || true; }
  slice corpus_smart cranfield/cran.all.1400 cran.all
  slice corpus_smart med/MED.ALL med.all
  slice corpus_smart cisi/CISI.ALL cisi.all
  slice corpus_trec cacm/topics.cacm.txt cacm-topics.trec
  slice topics cacm/topics.cacm.txt cacm.topics
  slice topics cranfield/cran.qry cran.qry
  slice topics med/MED.QRY med.qry
  slice topics cisi/CISI.QRY cisi.qry
  slice topics queries/topics.mq.20001-60000.txt mq.txt 1024
  slice topics queries/topics.msmarco-passage.dev-subset.txt msmarco.tsv 1024
  if [ -f $data/cacm/cacm.tar.gz ]; then
    rm -rf $out/cacm && mkdir -p $out/cacm
    tar -C $out/cacm -xzf $data/cacm/cacm.tar.gz CACM-0001.html CACM-0002.html CACM-0003.html 2>/dev/null || true
    for f in $out/cacm/*.html; do [ -f "$f" ] && cp "$f" "$seeds/corpus_html/"; done
    tar -C $out/cacm -cf "$seeds/corpus_html/cacm3.tar" . 2>/dev/null || true
    cp "$seeds/corpus_html/cacm3.tar" "$seeds/corpus_files/"
  fi
else
  echo "fuzz: $data absent: generated seeds only" >&2
fi

# ---- Runs -------------------------------------------------------------------------------------
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0
# TZ set: glibc's mktime (the archive readers' dates) otherwise reads /etc/localtime on every call
export TZ=UTC
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p $out/corpus $out/crashes $out/logs
# The harnesses write each input to a scratch file: in memory where /dev/shm is there.
scratch=$out
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch=/dev/shm
fail=0
for t in $targets; do
  [ -x "$out/fuzz/fuzz_$t" ] || { echo "fuzz: no harness $t" >&2; exit 2; }
  mkdir -p "$out/corpus/$t" "tests/fuzz/$t"
  rm -f "$out/logs/$t".*.log
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: memory is bounded.
  pids=()
  for i in $(seq 1 "$workers"); do
    TMPDIR=$scratch "$out/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/crashes/$t-" "$out/corpus/$t" "$seeds/$t" "tests/fuzz/$t" >"$out/logs/$t.$i.log" 2>&1 &
    pids+=($!)
  done
  st=ok
  for p in "${pids[@]}"; do wait "$p" || st=FAILED; done
  [ $st = ok ] || fail=1
  runs=$(cat "$out/logs/$t".*.log | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  log=$out/logs/$t.1.log
  if [ "$workers" -gt 1 ] && [ $st = ok ]; then
    # the corpus merged down to the inputs that keep its coverage
    rm -rf "$out/corpus/$t.min" && mkdir -p "$out/corpus/$t.min"
    log=$out/logs/$t.merge.log
    if TMPDIR=$scratch "$out/fuzz/fuzz_$t" -merge=1 -timeout=10 -rss_limit_mb=2048 "$out/corpus/$t.min" "$out/corpus/$t" >"$log" 2>&1; then
      rm -rf "$out/corpus/$t" && mv "$out/corpus/$t.min" "$out/corpus/$t"
      cov=$(sed -n 's/.* \([0-9]*\) new coverage edges.*/\1/p' "$log" | tail -1)
      ft=$(sed -n 's/.* \([0-9]*\) new features added.*/\1/p' "$log" | tail -1)
    else
      st=FAILED fail=1
    fi
  else
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  fi
  printf 'fuzz %-14s %-6s runs %-10s cov %-6s ft %s\n' "$t" "$st" "${runs:-?}" "${cov:-?}" "${ft:-?}"
  [ $st = ok ] || grep -hE 'ERROR|SUMMARY|runtime error|Test unit written' "$out/logs/$t".*.log | head -20 >&2 || true
done
exit $fail
