#!/bin/sh
# Runs two clsearch binaries on the same cases and compares what each prints (stdout, stderr),
# its exit status and every file it writes: for a change to the command that must not change
# what it does (tools/cli/). Each binary runs in the same folder in turn, so that the paths it
# prints and records (an index's roots) are alike. Timings are never asked for (no -v).
# Usage: same-output.sh OLD_CLSEARCH NEW_CLSEARCH [DATA_DIR]
# DATA_DIR holds cacm.tar.gz and topics.cacm.txt (default ../shared/data/cacm beside the tree).
set -u
old=$(realpath "$1") new=$(realpath "$2")
data=$(realpath "${3:-$(dirname "$0")/../../../shared/data/cacm}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The query modes, as the new binary's `search --help` names them (one "-m NAME help" line each,
# from the library's cls_mode_name): a mode added there is compared without an edit here.
modes=$("$new" search --help | sed -n 's/^ *-m \([^ ]*\) .*/\1/p' | tr '\n' ' ')
[ -n "$modes" ] || { echo "same-output.sh: $new search --help names no query mode" >&2; exit 1; }

# run NAME ARGS...: clsearch ARGS in the folder, its output and status kept under NAME
run() {
  name=$1; shift
  "$bin" "$@" >"$name.out" 2>"$name.err"
  echo $? >"$name.rc"
  printf '%s\t%s\n' "$name" "$*" >>"$work/cases"
}

all_cases() {
run help --help
run help2 help
run noargs
run version version
run helpsearch help search
run helpbench help bench
run helpbenchdecode help bench decode
run helpnone help nosuch
for c in devices index search stats check recode generate compare ciff-import ciff-export serve tune help version \
         "bench copy" "bench decode" "bench e2e" "bench topk" "bench scan" "bench intersect" "bench score" \
         "bench serve" bench; do
  # shellcheck disable=SC2086
  run "h-$(echo "$c" | tr ' ' _)" $c --help
  run "hh-$(echo "$c" | tr ' ' _)" $c -h
done
for typo in serch indx stat chek sarch bnch tun cif-import xyzzy versio hlp ciff devics benchh generat recod serv compar; do
  run "typo-$typo" "$typo"
  run "typoh-$typo" "$typo" --help
done
run bench-none bench
run bench-bad bench nosuch

run index index -q -c html -o cacm.idx cacm.tar.gz
run index-json index -q -c html --store title -o cacm2.idx cacm.tar.gz
for k in 10 1000; do
  for m in $modes; do
    run "s-$m-$k" search -x cacm.idx -q topics.cacm.txt -d ref -k $k -m "$m"
    run "sj-$m-$k" search -x cacm.idx -q topics.cacm.txt -d ref -k $k -m "$m" --json
    run "so-$m-$k" search -x cacm.idx -q topics.cacm.txt -d ref -k $k -m "$m" -o "run-$m-$k"
    run "sjo-$m-$k" search -x cacm.idx -q topics.cacm.txt -d ref -k $k -m "$m" --json -o "json-$m-$k"
  done
done
run s-fields search -x cacm.idx -q topics.cacm.txt -d ref -k 5 --fields title
run s-query search -x cacm.idx -d ref -k 5 computer programs --qid q7
run s-over search -x cacm.idx -q topics.cacm.txt -d ref -o cacm.idx
run s-overf search -x cacm.idx -q topics.cacm.txt -d ref -o topics.cacm.txt --force
run s-devnull search -x cacm.idx -q topics.cacm.txt -d ref -o /dev/null
run s-nodir search -x cacm.idx -q topics.cacm.txt -d ref -o nodir/run
run s-full search -x cacm.idx -q topics.cacm.txt -d ref -o /dev/full
run s-fields-json search -x cacm.idx -q topics.cacm.txt -d ref -k 3 --json --fields title
run s-fields-none search -x cacm.idx -q topics.cacm.txt -d ref -k 3 --fields none
run s-weights search -x cacm.idx -d ref -k 5 "computer^2.5" programs
run s-badweight search -x cacm.idx -d ref -k 5 "computer^x"
run s-nomatch search -x cacm.idx -d ref -m and zzzzqqq computer
run s-tag search -x cacm.idx -q topics.cacm.txt -d ref -k 2 --tag mine -m and-or
run s-params search -x cacm.idx -q topics.cacm.txt -d ref -k 7 --k1 1.2 --b 0.75
run index-empty index -q -c jsonl --allow-empty -o empty.idx topics.cacm.txt
run e-recode-codec recode cacm.idx -o y.idx --codec zz
run stats stats cacm.idx
run stats-json stats cacm.idx --json
run stats-codecs stats cacm.idx --codecs
run stats-codecs-json stats cacm.idx --codecs --json
run check check cacm.idx
run check-t check cacm.idx --threads 2
run recode recode cacm.idx -o cacm-bp.idx --codec bp --block 64
run compare compare run-or-10 run-or-10
run compare2 compare run-or-10 run-and-10
run ciff-export ciff-export cacm.idx -o cacm.ciff --description d
run ciff-import ciff-import cacm.ciff -o cacm3.idx
run gen generate --index gen.idx --topics gen.tsv --docs 2000 --queries 20 -q
run gen-text generate -o gendir --docs 200 --queries 5
run devices devices
run devices-json devices --json

# bad usage: messages and exit status
run e-search-none search
run e-search-k search -x cacm.idx -q topics.cacm.txt -k 0
run e-search-k2 search -x cacm.idx -q topics.cacm.txt -k x
run e-search-m search -x cacm.idx -q topics.cacm.txt -m nor
run e-search-k1 search -x cacm.idx -q topics.cacm.txt --k1 200
run e-search-b search -x cacm.idx -q topics.cacm.txt --b 2
run e-search-f search -x cacm.idx -q topics.cacm.txt -f xml
run e-search-f2 search -x cacm.idx -f tsv some words
run e-search-both search -x cacm.idx -q topics.cacm.txt words
run e-search-qid search -x cacm.idx -q topics.cacm.txt --qid 3
run e-search-tag search -x cacm.idx -q topics.cacm.txt --tag "a b"
run e-search-unk search -x cacm.idx -q topics.cacm.txt --bogus
run e-search-unk2 search -x cacm.idx -q topics.cacm.txt -Z
run e-search-miss search -x cacm.idx -q
run e-search-miss2 search -x cacm.idx -q topics.cacm.txt --k1
run e-search-abbr search -x cacm.idx -q topics.cacm.txt --dev ref -k 3
run e-search-mem search -x cacm.idx -q topics.cacm.txt --device-mem 0
run e-search-ms search -x cacm.idx -q topics.cacm.txt --batch-ms 0
run e-search-fields search -x cacm.idx -q topics.cacm.txt --fields nosuch -d ref
run e-search-fields2 search -x cacm.idx -q topics.cacm.txt --fields a,a -d ref
run e-search-noidx search -x nosuch.idx -q topics.cacm.txt -d ref
run e-search-notop search -x cacm.idx -q nosuch.txt -d ref
run e-index-none index
run e-index-c index -c xml -o x.idx cacm.tar.gz
run e-index-o index -c html cacm.tar.gz
run e-index-in index -c html -o x.idx
run e-index-thr index -c html -o x.idx --threads 0 cacm.tar.gz
run e-index-blk index -c html -o x.idx --block x cacm.tar.gz
run e-index-pd index -c html -o x.idx --pfor-depth 2000 cacm.tar.gz
run e-index-codec index -c html -o x.idx --codec zz cacm.tar.gz
run e-index-store index -c html -o x.idx --store nosuch cacm.tar.gz
run e-index-over index -c html -o topics.cacm.txt cacm.tar.gz
run e-index-unk index -c html -o x.idx --nope cacm.tar.gz
run e-index-empty index -q -c jsonl -o x.idx topics.cacm.txt
run e-stats stats
run e-stats2 stats a b
run e-stats3 stats --bogus
run e-stats-missing stats nosuch.idx
run e-check check
run e-check-t check cacm.idx --threads 0
run e-check-unk check cacm.idx --zz
run e-check-missing check nosuch.idx
run e-recode recode cacm.idx
run e-recode-n recode cacm.idx -o y.idx --block x
run e-gen generate
run e-gen-both generate -o d --index x.idx
run e-gen-docs generate --index x.idx --docs 0
run e-gen-scale generate --index x.idx --scale huge
run e-gen-top generate -o d --topics t
run e-gen-arg generate --index x.idx extra
run e-compare compare a
run e-compare2 compare nosuch1 nosuch2
run e-ciffi ciff-import
run e-ciffi2 ciff-import x.ciff -o z.idx --block 0
run e-ciffe ciff-export cacm.idx
run e-serve serve
run e-serve2 serve -x cacm.idx --max-batch 0
run e-serve3 serve -x cacm.idx extra
run e-serve4 serve -x cacm.idx --device-mem x
run e-devices devices --bogus
run e-tune tune --bogus
run e-bench-copy bench copy --bogus

}

for side in old new; do
  eval bin=\$$side
  rm -rf "$work/run" "$work/cases"
  mkdir "$work/run"
  cp "$data/cacm.tar.gz" "$data/topics.cacm.txt" "$work/run/"
  (cd "$work/run" && all_cases)
  mv "$work/run" "$work/$side"
done
cases=$(wc -l <"$work/cases")
files=$(cd "$work/old" && find . -type f | wc -l)
differ=0
for f in $( (cd "$work/old" && find . -type f; cd "$work/new" && find . -type f) | sort -u); do
  if ! cmp -s "$work/old/$f" "$work/new/$f"; then
    differ=$((differ + 1))
    name=$(basename "$f" | sed 's/\.[a-z]*$//')
    echo "DIFFER $f: clsearch $(grep "^$name	" "$work/cases" | cut -f2- | head -1)"
    diff "$work/old/$f" "$work/new/$f" 2>&1 | head -10
  fi
done
echo "$cases cases, $files files compared (outputs, exit statuses, files written), $differ differ"
[ "$differ" = 0 ]
