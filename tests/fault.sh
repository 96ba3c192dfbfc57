#!/bin/sh
# Fault injection sweep (CLSEARCH_FAULT, src/util/fault.h): for a small index build and a search
# on the OpenCL device (POCL here), counts the operations of each kind a clean run does, then
# runs again once per operation with that one failing. Each run must either succeed with the
# clean output (the search: the reference engine's run; the build: the clean index), or exit
# non-zero with a message on stderr and leave neither the output nor a temporary file. Then a
# kernel build failing with an empty log: retried once (the notice, the clean run), and a
# failure of the retry too (a clear error naming clBuildProgram, no run).
#   fault.sh CLSEARCH SOURCE_DIR TMP_DIR DEVICE
set -u
bin=$1 src=$2 tmp=$3/fault dev=$4
rm -rf "$tmp" && mkdir -p "$tmp/out" || exit 1
fails=0 survived=0 stopped=0
say() { echo "fault: $*"; }
bad() { say "FAIL: $*"; fails=$((fails + 1)); }

# A generated collection: 120 documents of 3 to 14 words of a 24-word vocabulary, 24 queries.
awk 'BEGIN { srand(7); split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega", w, " ");
  for (d = 0; d < 120; d++) { n = 3 + int(rand() * 12); t = ""; for (i = 0; i < n; i++) t = t " " w[1 + int(rand() * 24)];
    printf "{\"id\": \"doc%d\", \"contents\": \"%s\"}\n", d, t } }' >"$tmp/c.jsonl"
awk 'BEGIN { srand(11); split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega", w, " ");
  for (q = 1; q <= 24; q++) { n = 1 + int(rand() * 4); t = ""; for (i = 0; i < n; i++) t = t " " w[1 + int(rand() * 24)];
    printf "%d\t%s\n", q, t } }' >"$tmp/topics.tsv"

# counts KIND: the operations of KIND the clean run whose stderr is in $tmp/count.err did
counts() { sed -n "s/^clsearch fault counts:.* $1 \([0-9]*\).*/\1/p" "$tmp/count.err" | tail -1; }

# check WHAT OUT CLEAN RC: the outcome of one faulty run (stderr in $tmp/err)
check() {
  what=$1 out=$2 clean=$3 rc=$4
  if grep -q -e 'Sanitizer' -e 'runtime error' "$tmp/err"; then
    bad "$what: sanitizer report"; sed -n 1,20p "$tmp/err"; return
  fi
  if [ "$rc" = 0 ]; then
    survived=$((survived + 1))
    cmp -s "$out" "$clean" || bad "$what: exit 0 but the output differs from the clean one"
    [ "$(ls "$tmp/out" | wc -l)" = 1 ] || bad "$what: exit 0 but left $(ls "$tmp/out" | tr '\n' ' ')"
  else
    stopped=$((stopped + 1))
    [ "${show:-0}" = 1 ] && say "$what: exit $rc: $(tail -1 "$tmp/err")"
    [ -s "$tmp/err" ] || bad "$what: exit $rc without a message"
    [ -e "$out" ] && bad "$what: exit $rc but $out exists"
    if ls "$tmp/out" | grep -q .; then bad "$what: exit $rc left $(ls "$tmp/out" | head -3 | tr '\n' ' ')"; fi
    [ "$rc" -ge 128 ] && bad "$what: killed by signal $((rc - 128))"
  fi
  rm -f "$tmp/out/"*
}

# ---- a malformed CLSEARCH_FAULT: exit 2 naming it, nothing written (never a run without faults)
for v in 'write:-1' ',,,' 'write:99999999999999999999' 'write:1,' 'write: 1' 'writ:1' 'write:0' 'write' 'count,write:1'; do
  CLSEARCH_FAULT=$v "$bin" index -q -c jsonl -o "$tmp/out/x.idx" "$tmp/c.jsonl" 2>"$tmp/err"
  rc=$?
  if [ $rc != 2 ]; then bad "CLSEARCH_FAULT='$v': exit $rc, not 2: $(tail -c 300 "$tmp/err")"
  elif ! grep -qF "CLSEARCH_FAULT='$v': " "$tmp/err"; then bad "CLSEARCH_FAULT='$v': not named: $(tail -c 300 "$tmp/err")"
  elif ls "$tmp/out" | grep -q .; then bad "CLSEARCH_FAULT='$v': left $(ls "$tmp/out" | tr '\n' ' ')"
  else say "CLSEARCH_FAULT='$v': exit 2, $(cut -c1-100 "$tmp/err")"; fi
  rm -f "$tmp/out/"*
done

# a command that counts no operation (--help) is stopped as well: the value is read at the start
CLSEARCH_FAULT=',,,' "$bin" --help >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc != 2 ] || ! grep -qF "CLSEARCH_FAULT=',,,': " "$tmp/err"; then bad "CLSEARCH_FAULT=',,,' clsearch --help: exit $rc: $(tail -c 300 "$tmp/err")"
else say "CLSEARCH_FAULT=',,,' clsearch --help: exit 2"; fi

# ---- index build (one analysis thread, so that the Nth operation is the same one each run) ----
build() { "$bin" index -q -c jsonl --threads 1 --block 64 --store none -o "$1" "$tmp/c.jsonl"; }
build "$tmp/clean.idx" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
CLSEARCH_FAULT=count build "$tmp/count.idx" 2>"$tmp/count.err" || { cat "$tmp/count.err"; exit 1; }
cmp -s "$tmp/count.idx" "$tmp/clean.idx" || { say "two clean builds differ: cannot compare"; exit 1; }
runs=0
for kind in host-alloc write device-alloc enqueue; do
  n=$(counts $kind)
  say "index: $kind: ${n:-?} operations"
  i=1
  while [ "$i" -le "${n:-0}" ]; do
    CLSEARCH_FAULT=$kind:$i build "$tmp/out/x.idx" 2>"$tmp/err"
    check "index $kind:$i" "$tmp/out/x.idx" "$tmp/clean.idx" $?
    i=$((i + 1)) runs=$((runs + 1))
  done
done

# ---- index --shards 3: the set, whole and equal to a clean run's, or no file of it ------------
shards() { "$bin" index -q -c jsonl --threads 1 --block 64 --store none --shards 3 -o "$1" "$tmp/c.jsonl"; }
mkdir -p "$tmp/clean3" || exit 1
shards "$tmp/clean3/s" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
CLSEARCH_FAULT=count shards "$tmp/count3" 2>"$tmp/count.err" || { cat "$tmp/count.err"; exit 1; }
for kind in host-alloc write; do
  n=$(counts $kind)
  say "index --shards 3: $kind: ${n:-?} operations"
  i=1
  while [ "$i" -le "${n:-0}" ]; do
    what="index --shards 3 $kind:$i"
    CLSEARCH_FAULT=$kind:$i shards "$tmp/out/s" 2>"$tmp/err"
    rc=$?
    if grep -q -e 'Sanitizer' -e 'runtime error' "$tmp/err"; then
      bad "$what: sanitizer report"; sed -n 1,20p "$tmp/err"
    elif [ "$rc" = 0 ]; then
      survived=$((survived + 1))
      for j in 0 1 2; do
        cmp -s "$tmp/out/s.$j" "$tmp/clean3/s.$j" || bad "$what: exit 0 but s.$j differs from the clean one"
      done
      [ "$(ls "$tmp/out" | wc -l)" = 3 ] || bad "$what: exit 0 but left $(ls "$tmp/out" | tr '\n' ' ')"
    else
      stopped=$((stopped + 1))
      [ -s "$tmp/err" ] || bad "$what: exit $rc without a message"
      if ls "$tmp/out" | grep -q .; then bad "$what: exit $rc left $(ls "$tmp/out" | head -3 | tr '\n' ' ')"; fi
      [ "$rc" -ge 128 ] && bad "$what: killed by signal $((rc - 128))"
    fi
    rm -f "$tmp/out/"*
    i=$((i + 1)) runs=$((runs + 1))
  done
done

# ---- search on the device, against the reference engine ----------------------------------
search() { "$bin" search -x "$tmp/clean.idx" -q "$tmp/topics.tsv" -k 10 -d "$1" -o "$2"; }
search ref "$tmp/ref.run" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
CLSEARCH_FAULT=count search "$dev" "$tmp/count.run" 2>"$tmp/count.err" || { cat "$tmp/count.err"; exit 1; }
cmp -s "$tmp/count.run" "$tmp/ref.run" || { say "the clean device run differs from the reference engine's"; exit 1; }
for kind in device-alloc enqueue host-alloc write; do
  n=$(counts $kind)
  say "search: $kind: ${n:-?} operations"
  i=1
  while [ "$i" -le "${n:-0}" ]; do
    CLSEARCH_FAULT=$kind:$i search "$dev" "$tmp/out/x.run" 2>"$tmp/err"
    check "search $kind:$i" "$tmp/out/x.run" "$tmp/ref.run" $?
    i=$((i + 1)) runs=$((runs + 1))
  done
done
# ---- a device list with a device that breaks (every launch on executor 0 fails): the search runs
# on the others, the run is the reference's, and -v names the executor set aside and why. $1: the
# device list, $2: what it is for the messages ---------------------------------------------------
set_aside() {
  CLSEARCH_FAULT='enqueue:1+@0' "$bin" search -v -x "$tmp/clean.idx" -q "$tmp/topics.tsv" -k 10 -d "$1" \
    -o "$tmp/out/x.run" 2>"$tmp/err"
  rc=$?
  if [ $rc != 0 ]; then bad "enqueue:1+@0 $2: exit $rc: $(tail -c 300 "$tmp/err")"
  elif ! cmp -s "$tmp/out/x.run" "$tmp/ref.run"; then bad "enqueue:1+@0 $2: the run differs from the reference engine's"
  elif ! grep -q "^executors: \[0\] [^ ]*: 0 queries (set aside: .*CL_OUT_OF_RESOURCES" "$tmp/err"; then
    bad "enqueue:1+@0 $2: -v does not name executor 0 set aside: $(grep executors "$tmp/err" | cut -c1-300)"
  else say "enqueue:1+@0 $2: the run equals the reference engine's, executor 0 set aside"; fi
  rm -f "$tmp/out/"*
}
set_aside "$dev,$dev" "on two executors"
# the device beside the host executor (executor 0 of DEVICE,host:2 takes the search first: neither
# has a time model yet): the host runs it all
set_aside "$dev,host:2" "beside the host"
# and on one device the failure is the search's: exit 1, a clear error, no run
CLSEARCH_FAULT='enqueue:1+@0' search "$dev" "$tmp/out/x.run" 2>"$tmp/err"
rc=$?
if [ $rc != 1 ] || ! grep -q "CL_OUT_OF_RESOURCES" "$tmp/err" || ls "$tmp/out" | grep -q .; then
  bad "enqueue:1+@0 on one device: exit $rc: $(tail -c 300 "$tmp/err")"
else say "enqueue:1+@0 on one device: exit 1, no run"; fi
rm -f "$tmp/out/"*
# ---- a kernel build that fails with an empty log (CLSEARCH_FAULT=build): retried once --------
# Builds from source happen only where no binary is cached, so each run has a fresh cache folder.
# build:1: the first build fails, the retry says so and succeeds, and the run is the reference's;
# build:1,build:2: the retry fails too, which is a clear error naming clBuildProgram, with no run.
cold() { CLSEARCH_CACHE_DIR="$tmp/cold.$1" search "$dev" "$tmp/out/x.run"; }
CLSEARCH_FAULT=build:1 cold 1 2>"$tmp/err"
rc=$?
if [ $rc != 0 ]; then bad "build:1: exit $rc: $(tail -c 300 "$tmp/err")"
elif ! grep -q "clBuildProgram failed with CL_BUILD_PROGRAM_FAILURE and an empty build log: building once more" "$tmp/err"; then
  bad "build:1: no notice of the retry: $(tail -c 300 "$tmp/err")"
elif ! cmp -s "$tmp/out/x.run" "$tmp/ref.run"; then bad "build:1: the run differs from the reference engine's"
else say "build:1: retried ($(grep -c "building once more" "$tmp/err") notice), the run equals the reference engine's"; fi
rm -f "$tmp/out/"*
CLSEARCH_FAULT=build:1,build:2 cold 2 2>"$tmp/err"
rc=$?
if [ $rc != 1 ]; then bad "build:1,build:2: exit $rc, not 1: $(tail -c 300 "$tmp/err")"
elif ! grep -q "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11) (the second attempt" "$tmp/err"; then
  bad "build:1,build:2: no clear error: $(tail -c 300 "$tmp/err")"
elif ls "$tmp/out" | grep -q .; then bad "build:1,build:2: left $(ls "$tmp/out" | tr '\n' ' ')"
else say "build:1,build:2: exit 1, $(grep -m1 -o "clBuildProgram failed: [^(]*([^)]*)" "$tmp/err"), no run"; fi
rm -rf "$tmp/out/"* "$tmp"/cold.*
# ---- the compiler process crashing (CLSEARCH_FAULT=compiler-crash: clsearch-compile aborts, as
# POCL 5.0 did on a kernel it could not take): exit 1 with an error naming the signal, the device
# and the program, and no run; the command itself does not die. The suite compiles in-process
# (CLSEARCH_COMPILER=none in CTest's environment); this case uses the compiler process.
(unset CLSEARCH_COMPILER; CLSEARCH_FAULT=compiler-crash:1 cold 3) 2>"$tmp/err"
rc=$?
if [ $rc != 1 ]; then bad "compiler-crash:1: exit $rc, not 1: $(tail -c 300 "$tmp/err")"
elif ! grep -q "the OpenCL compiler crashed (SIGABRT, signal 6) compiling the kernel program of .* for device" "$tmp/err"; then
  bad "compiler-crash:1: no clear error: $(tail -c 400 "$tmp/err")"
elif ls "$tmp/out" | grep -q .; then bad "compiler-crash:1: left $(ls "$tmp/out" | tr '\n' ' ')"
else say "compiler-crash:1: exit 1, $(grep -m1 -o "the OpenCL compiler crashed ([^)]*) compiling the kernel program of [^ ]*" "$tmp/err")..., no run"; fi
rm -rf "$tmp/out/"* "$tmp"/cold.*

say "$runs faulty runs: $survived with the clean output, $stopped stopped with a message; $fails failures"
[ $fails = 0 ]
