#!/usr/bin/env bash
# Hostile input and failing devices, through the command: guarded outputs (an input, a read-only
# file, a file of another kind; --force; the umask) of index, search, recode, generate -o DIR,
# bench --json and tune, temporary files removed on SIGINT, SIGTERM and SIGHUP, write errors on
# standard output and /dev/full, a full disk (a file-size limit, CLSEARCH_FAULT=write), duplicate document ids and qids, an index file cut
# by another program during a search, and a device start under an address-space limit.
#   hostile.sh CLSEARCH WORKDIR SANITIZED(0|1)
# SANITIZED=1 skips the address-space case: ASan reserves terabytes of virtual memory at start,
# so no `ulimit -v` leaves it room to run at all.
set -u
set -m # background jobs in their own process group, SIGINT not ignored (a shell ignores it for them)
cls=$1 work=$2/hostile.$$ sanitized=${3:-0}
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# expect RC CMD...: runs CMD (stderr to err.txt), checks its exit status
expect() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -ne "$want" ]; then fail "exit $rc, not $want: $* ($(head -c 300 err.txt))"; return 1; fi
  return 0
}
has() { grep -q -- "$1" err.txt || { fail "stderr lacks '$1': $(head -c 300 err.txt)"; return 1; }; }

printf '{"id":"d1","contents":"hello world"}\n{"id":"d2","contents":"hello there"}\n' > c.jsonl
printf '1\thello\n2\tworld\n' > q.tsv
expect 0 "$cls" index -q -c jsonl -o s.idx c.jsonl || exit 1
cp c.jsonl c.orig; cp s.idx s.orig

# ---- guarded outputs
expect 1 "$cls" index -c jsonl -o c.jsonl c.jsonl && has "is the input" && cmp -s c.jsonl c.orig &&
  ok "index -o INPUT refused, input intact"
ln -s c.jsonl other-name.jsonl
expect 1 "$cls" index -c jsonl -o c.jsonl other-name.jsonl && has "is the input" && ok "the same file under another name refused"
expect 1 "$cls" search -x s.idx -q q.tsv -d ref -o s.idx && has "is the input" && cmp -s s.idx s.orig &&
  ok "search -o INDEX refused, index intact"
expect 1 "$cls" search -x s.idx -q q.tsv -d ref -o q.tsv && has "is the input" && ok "search -o TOPICS refused"
expect 1 "$cls" recode s.idx -o s.idx && has "is the input" && ok "recode -o INPUT refused"
echo keep > ro.txt; chmod 0444 ro.txt
expect 1 "$cls" search -x s.idx -q q.tsv -d ref -o ro.txt && has "read-only" && [ "$(cat ro.txt)" = keep ] &&
  ok "a read-only file is not replaced"
expect 1 "$cls" search -x s.idx -q q.tsv -d ref -o ro.txt --force && [ "$(cat ro.txt)" = keep ] &&
  ok "a read-only file is not replaced with --force either"
echo "my notes" > notes.txt
expect 1 "$cls" search -x s.idx -q q.tsv -d ref -o notes.txt && has "not a run" && [ "$(cat notes.txt)" = "my notes" ] &&
  ok "an existing non-run file is not replaced"
expect 1 "$cls" index -c jsonl -o notes.txt c.jsonl && has "not a clsearch index" && ok "index -o over a non-index refused"
expect 0 "$cls" search -x s.idx -q q.tsv -d ref -o notes.txt --force && grep -q "Q0 d" notes.txt &&
  ok "--force replaces it"
expect 0 "$cls" search -x s.idx -q q.tsv -d ref -o notes.txt && ok "an earlier run is replaced"
: > empty.run
expect 0 "$cls" search -x s.idx -q q.tsv -d ref -o empty.run && ok "an empty file is replaced"
expect 0 "$cls" index -q -c jsonl -o s2.idx c.jsonl && expect 0 "$cls" index -q -c jsonl -o s2.idx c.jsonl &&
  ok "an earlier index is replaced"
expect 0 "$cls" index -q -c jsonl -o c.jsonl c.jsonl --force && "$cls" stats c.jsonl >/dev/null &&
  ok "--force writes over the input"
cp c.orig c.jsonl

# generate -o DIR (DIR/corpus.jsonl, DIR/topics.tsv), bench --json FILE and tune's file, the same way
mkdir gd && echo "my notes" > gd/corpus.jsonl
expect 1 "$cls" generate -o gd --docs 50 --queries 5 && has "gd/corpus.jsonl exists and is not a JSON-lines file" &&
  [ "$(cat gd/corpus.jsonl)" = "my notes" ] && [ ! -e gd/topics.tsv ] && ok "generate -o DIR: a corpus.jsonl of another kind is not replaced" || fail "generate -o DIR: a corpus.jsonl of another kind is not replaced"
expect 0 "$cls" generate -o gd --docs 50 --queries 5 --force && [ "$(wc -l <gd/corpus.jsonl)" = 50 ] &&
  ok "generate -o DIR --force replaces it" || fail "generate -o DIR --force replaces it"
expect 0 "$cls" generate -o gd --docs 60 --queries 5 && [ "$(wc -l <gd/corpus.jsonl)" = 60 ] &&
  ok "generate -o DIR replaces its own earlier output" || fail "generate -o DIR replaces its own earlier output"
chmod 0444 gd/topics.tsv
expect 1 "$cls" generate -o gd --docs 70 --queries 5 --force && has "gd/topics.tsv exists and is read-only" &&
  [ "$(wc -l <gd/corpus.jsonl)" = 60 ] && ok "generate -o DIR: a read-only topics.tsv is not replaced, --force or not" || fail "generate -o DIR: a read-only topics.tsv is not replaced, --force or not"
chmod 0644 gd/topics.tsv
be2e() { "$cls" bench e2e -x s.idx -q q.tsv -d ref -m or -k 10 -b 1 --seconds 0.05 "$@"; }
echo "my notes" > bn.txt
expect 1 be2e --json bn.txt && has "bn.txt exists and is not a JSON-lines file" && [ "$(cat bn.txt)" = "my notes" ] &&
  ok "bench --json: a file of another kind is not replaced" || fail "bench --json: a file of another kind is not replaced"
expect 1 be2e --json s.idx && has "is the input" && cmp -s s.idx s.orig && ok "bench --json INDEX (an input) refused, intact" || fail "bench --json INDEX (an input) refused, intact"
expect 1 be2e --json q.tsv && has "is the input" && ok "bench --json TOPICS (an input) refused" || fail "bench --json TOPICS (an input) refused"
expect 1 be2e --json ro.txt --force && has "read-only" && [ "$(cat ro.txt)" = keep ] &&
  ok "bench --json: a read-only file is not replaced, --force or not" || fail "bench --json: a read-only file is not replaced, --force or not"
expect 0 be2e --json bn.txt --force && [ "$(wc -l <bn.txt)" = 1 ] && [ "$(head -c 1 bn.txt)" = "{" ] &&
  ok "bench --json --force writes over it" || fail "bench --json --force writes over it"
expect 0 be2e --json bn.txt && [ "$(wc -l <bn.txt)" = 2 ] && ok "bench --json: a second run appends its lines" || fail "bench --json: a second run appends its lines"
# tune says so before its sweeps (and before it opens a device)
echo "my notes" > tn.txt
expect 1 "$cls" tune -o tn.txt && has "tn.txt exists and is not a clsearch tuning file" && [ "$(cat tn.txt)" = "my notes" ] &&
  ok "tune -o: a file of another kind is not replaced" || fail "tune -o: a file of another kind is not replaced"
expect 1 "$cls" tune -o ro.txt --force && has "read-only" && ok "tune -o: a read-only file is not replaced, --force or not" || fail "tune -o: a read-only file is not replaced, --force or not"
expect 1 "$cls" tune -o . && has "it is a folder" && ok "tune -o FOLDER refused" || fail "tune -o FOLDER refused"
expect 1 "$cls" tune -o no/such/folder.json && has "folder no/such" && ok "tune -o in a missing folder refused" || fail "tune -o in a missing folder refused"
expect 1 "$cls" tune --json tn.txt && has "tn.txt exists and is not a JSON-lines file" && ok "tune --json: the same rules" || fail "tune --json: the same rules"
# the mode of new files: 0666 less the umask, runs, indexes, generated collections and bench lines alike
for m in 022:644 027:640 002:664; do
  (umask "${m%%:*}" && rm -rf u.run u.idx ug u.jsonl && "$cls" search -x s.idx -q q.tsv -d ref -o u.run &&
    "$cls" index -q -c jsonl -o u.idx c.jsonl && "$cls" generate -o ug --docs 5 --queries 2 &&
    be2e --json u.jsonl >/dev/null) 2>err.txt
  r=$(stat -c %a u.run) i=$(stat -c %a u.idx) g=$(stat -c %a ug/corpus.jsonl) t=$(stat -c %a ug/topics.tsv) j=$(stat -c %a u.jsonl)
  if [ "$r $i $g $t $j" = "$(printf '%s ' ${m#*:} ${m#*:} ${m#*:} ${m#*:} ${m#*:} | sed 's/ $//')" ]; then
    ok "umask ${m%%:*}: run $r, index $i, corpus $g, topics $t, bench lines $j"
  else fail "umask ${m%%:*}: run $r, index $i, corpus $g, topics $t, bench lines $j, want ${m#*:}"; fi
done

# ---- write errors on standard output

if [ -w /dev/full ]; then
  "$cls" stats s.idx >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && has "No space left" && ok "stats > /dev/full: exit 1" || fail "stats > /dev/full: exit $rc"
  "$cls" stats s.idx --json >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && ok "stats --json > /dev/full: exit 1" || fail "stats --json > /dev/full: exit $rc"
  "$cls" search -x s.idx -q q.tsv -d ref >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && has "No space left" && ok "search > /dev/full: exit 1" || fail "search > /dev/full: exit $rc"
  be2e --json /dev/full >/dev/null 2>err.txt; rc=$?
  [ $rc = 1 ] && has "writing /dev/full: No space left" && ok "bench --json /dev/full: exit 1" ||
    fail "bench --json /dev/full: exit $rc"
else
  echo "SKIP part: /dev/full is absent"
fi

# ---- a full disk under a file that is replaced: the write fails, the old file stays, nothing else
# does. A file-size limit (ulimit -f, SIGXFSZ ignored: the write fails with EFBIG) stands in for
# the disk; CLSEARCH_FAULT=write:1 for a full disk at the end.
awk 'BEGIN { for (i = 0; i < 400; i++) printf "{\"line\": %d, \"pad\": \"................\"}\n", i }' >big.jsonl
cp big.jsonl big.orig; cp gd/corpus.jsonl gd.corpus; cp gd/topics.tsv gd.topics
# after_full WHAT RC: exit 1 with a message, the old files as they were, no temporary file left
after_full() {
  set -- "$1" "$2" gd/*.tmp.* ./*.tmp.*
  if [ "$2" != 1 ]; then fail "$1: exit $2, not 1: $(tail -c 300 err.txt)"
  elif ! cmp -s big.jsonl big.orig || ! cmp -s gd/corpus.jsonl gd.corpus || ! cmp -s gd/topics.tsv gd.topics; then
    fail "$1: an old file changed"
  elif [ -e "$3" ] || [ -e "$4" ]; then fail "$1: left $3 $4"
  else ok "$1: exit 1, old files intact, nothing left ($(tail -1 err.txt | cut -c1-90))"; fi
}
(ulimit -f 4; trap '' XFSZ; exec "$cls" generate -o gd --docs 3000 --queries 5) >out.txt 2>err.txt
after_full "generate -o DIR past a 4 KiB file-size limit" $?
(ulimit -f 4; trap '' XFSZ; be2e --json big.jsonl) >out.txt 2>err.txt
after_full "bench --json past a 4 KiB file-size limit" $?
CLSEARCH_FAULT=write:1 "$cls" generate -o gd --docs 40 --queries 5 >out.txt 2>err.txt
after_full "generate -o DIR, CLSEARCH_FAULT=write:1" $?
CLSEARCH_FAULT=write:2 "$cls" generate -o gd --docs 40 --queries 5 >out.txt 2>err.txt
after_full "generate -o DIR, CLSEARCH_FAULT=write:2 (topics.tsv)" $?
CLSEARCH_FAULT=write:1 be2e --json big.jsonl >out.txt 2>err.txt
after_full "bench --json, CLSEARCH_FAULT=write:1" $?

# ---- duplicates
printf '{"id":"d1","contents":"hello world"}\n{"id":"d1","contents":"hello there"}\n' > dup.jsonl
expect 1 "$cls" index -c jsonl -o dup.idx dup.jsonl && has "'d1' was already given to document 1" && [ ! -e dup.idx ] &&
  ok "duplicate ids in JSONL refused"
expect 0 "$cls" index -c jsonl -o dup.idx dup.jsonl --allow-duplicate-ids && has "skipped 1 document" &&
  [ "$("$cls" search -x dup.idx -d ref hello | wc -l)" = 1 ] && ok "--allow-duplicate-ids keeps the first only"
mkdir -p t1 t2 && echo '<html><title>a</title>hello</html>' > t1/dup.html && cp t1/dup.html t2/dup.html
tar -cf dup.tar -C t1 dup.html -C ../t2 dup.html
expect 1 "$cls" index -c html -o duph.idx dup.tar && has "already given" && ok "two same-named files in a tar refused"
printf '1\thello\n1\tworld\n' > dupq.tsv
expect 1 "$cls" search -x s.idx -q dupq.tsv -d ref && has "query id '1' is given twice" && ok "duplicate qids refused"

# ---- signals: no temporary file stays, and the process dies of the signal
for sig in INT TERM HUP; do
  rm -f big.idx big.idx.tmp.*
  "$cls" generate --index big.idx --docs 1000000 -q --threads 2 2>err.txt &
  pid=$!
  seen=0
  while kill -0 $pid 2>/dev/null; do
    set -- big.idx.tmp.*
    if [ -e "$1" ]; then seen=1; kill -s $sig $pid; break; fi
    sleep 0.005
  done
  wait $pid; rc=$?
  want=$((128 + $(kill -l $sig)))
  set -- big.idx.tmp.*
  if [ $seen = 0 ]; then fail "SIG$sig: the index was written before its temporary file could be seen (exit $rc)"
  elif [ -e "$1" ]; then fail "SIG$sig: $1 left behind"
  elif [ $rc != $want ]; then fail "SIG$sig: exit $rc, not $want"
  else ok "SIG$sig during the write: exit $rc, no temporary file"; fi
done
rm -f big.idx
# and generate -o DIR's corpus.jsonl
for sig in INT TERM HUP; do
  rm -rf gs && mkdir gs
  "$cls" generate -o gs --docs 1000000 -q 2>err.txt &
  pid=$!
  seen=0
  while kill -0 $pid 2>/dev/null; do
    set -- gs/corpus.jsonl.tmp.*
    if [ -e "$1" ]; then seen=1; kill -s $sig $pid; break; fi
    sleep 0.005
  done
  wait $pid; rc=$?
  want=$((128 + $(kill -l $sig)))
  set -- gs/*
  if [ $seen = 0 ]; then fail "generate -o, SIG$sig: written before its temporary file could be seen (exit $rc)"
  elif [ -e "$1" ]; then fail "generate -o, SIG$sig: $1 left behind"
  elif [ $rc != $want ]; then fail "generate -o, SIG$sig: exit $rc, not $want"
  else ok "generate -o DIR, SIG$sig during the write: exit $rc, nothing left in DIR"; fi
done
rm -rf gs

# ---- an index file cut by another program while a search has it open: a clear error, exit 1,
# no run, never SIGBUS. The topics come through a FIFO: the search opens (and maps) the index,
# then waits for them, which is when the file is cut; a writer that never gets its reader (the
# search failed before) is ended. Cuts: at a page boundary near the start (every later read
# faults), in the middle (the postings), and in the last page (zeros without a fault).
"$cls" generate --index g.idx --topics g.tsv --docs 3000 --queries 40 -q 2>err.txt || fail "generate: $(cat err.txt)"
size=$(stat -c %s g.idx)
devs=ref
"$cls" devices 2>/dev/null | grep -qi cpu && devs="ref cpu"
for dev in $devs; do
  for cut in 4096 $((size / 2)) $((size - 100)); do
    cp g.idx cut.idx && rm -f topics.fifo cut.run && mkfifo topics.fifo
    (exec 3>topics.fifo && truncate -s $cut cut.idx && cat g.tsv >&3) &
    writer=$!
    "$cls" search -x cut.idx -q topics.fifo -d $dev -k 10 -o cut.run >out.txt 2>err.txt
    rc=$?
    kill $writer 2>/dev/null; wait $writer 2>/dev/null
    set -- cut.run.tmp.*
    if [ $rc != 1 ]; then fail "-d $dev, cut to $cut of $size bytes: exit $rc, not 1: $(tail -c 300 err.txt)"
    elif ! grep -q "shrank while in use, from $size to $cut bytes" err.txt; then fail "-d $dev, cut to $cut: $(tail -c 300 err.txt)"
    elif [ -e cut.run ] || [ -e "$1" ]; then fail "-d $dev, cut to $cut: a run or its temporary file was left"
    else ok "-d $dev, index cut to $cut of $size bytes during the search: exit 1, $(grep -o "the index file [^(]*" err.txt)"; fi
  done
done

# ---- serve under a hard limit of 1,024 open files: the default connection limit is lowered to
# fit, with a note, and the server answers; an explicit --max-conns that cannot fit is refused
( ulimit -Sn 1024 && ulimit -Hn 1024 && exec timeout -s TERM 3 "$cls" serve -x s.idx -d ref --listen 127.0.0.1:0 ) \
  >out.txt 2>err.txt
if grep -q "note: --max-conns [0-9]*, not 1024" err.txt && grep -q "listening on" out.txt; then
  ok "serve under ulimit -Hn 1024 starts with fewer connections, said"
else fail "serve under ulimit -Hn 1024: $(head -c 300 err.txt)"; fi
( ulimit -Sn 1024 && ulimit -Hn 1024 && exec timeout -s TERM 3 "$cls" serve -x s.idx -d ref --listen 127.0.0.1:0 \
  --max-conns 1024 ) >out.txt 2>err.txt
rc=$?
if [ $rc = 1 ] && grep -q "the hard limit is 1024" err.txt; then ok "an explicit --max-conns beyond the hard limit is refused"
else fail "serve --max-conns 1024 under ulimit -Hn 1024: exit $rc: $(head -c 300 err.txt)"; fi

# ---- a device start under an address-space limit: a clear message, never an abort
if [ "$sanitized" = 1 ]; then
  echo "SKIP part: ulimit -v under AddressSanitizer (it reserves terabytes of address space)"
elif ! "$cls" devices 2>/dev/null | grep -qi cpu; then
  echo "SKIP part: no OpenCL CPU device"
else
  for kb in 200000 300000 400000; do
    rm -rf cache
    (ulimit -v $kb; CLSEARCH_CACHE_DIR=$PWD/cache/cls POCL_CACHE_DIR=$PWD/cache/pocl \
      exec "$cls" search -x s.idx -q q.tsv -d cpu) >out.txt 2>err.txt
    rc=$?
    if [ $rc = 0 ]; then ok "ulimit -v $kb: the search ran"
    elif [ $rc -gt 128 ]; then fail "ulimit -v $kb: killed by signal $((rc - 128)): $(tail -c 300 err.txt)"
    elif grep -q "out of host memory" err.txt; then ok "ulimit -v $kb: exit $rc, $(tail -1 err.txt | cut -c1-150)"
    else fail "ulimit -v $kb: exit $rc without 'out of host memory': $(tail -c 300 err.txt)"; fi
  done
fi

cd / && rm -rf "$work"
[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
