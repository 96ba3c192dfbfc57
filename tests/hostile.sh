#!/usr/bin/env bash
# Hostile input and failing devices, through the command: guarded outputs (an input, a read-only
# file, a file of another kind; --force; the umask), temporary files removed on SIGINT, SIGTERM
# and SIGHUP, write errors on standard output, duplicate document ids and qids, an index file cut
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
# the mode of new files: 0666 less the umask, runs and indexes alike
for m in 022:644 027:640 002:664; do
  (umask "${m%%:*}" && rm -f u.run u.idx && "$cls" search -x s.idx -q q.tsv -d ref -o u.run &&
    "$cls" index -q -c jsonl -o u.idx c.jsonl) 2>err.txt
  r=$(stat -c %a u.run) i=$(stat -c %a u.idx)
  if [ "$r" = "${m#*:}" ] && [ "$i" = "${m#*:}" ]; then ok "umask ${m%%:*}: run $r, index $i"
  else fail "umask ${m%%:*}: run $r, index $i, want ${m#*:}"; fi
done

# ---- write errors on standard output

if [ -w /dev/full ]; then
  "$cls" stats s.idx >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && has "No space left" && ok "stats > /dev/full: exit 1" || fail "stats > /dev/full: exit $rc"
  "$cls" stats s.idx --json >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && ok "stats --json > /dev/full: exit 1" || fail "stats --json > /dev/full: exit $rc"
  "$cls" search -x s.idx -q q.tsv -d ref >/dev/full 2>err.txt; rc=$?
  [ $rc = 1 ] && has "No space left" && ok "search > /dev/full: exit 1" || fail "search > /dev/full: exit $rc"
else
  echo "SKIP part: /dev/full is absent"
fi

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
