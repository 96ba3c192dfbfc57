#!/usr/bin/env bash
# Every benchmark suite in one run, for the tables of docs/PERFORMANCE.md: tuning, the copy
# ceiling, scan, decode (every codec x block size x scan variant, whole lists and scattered
# blocks), intersect, score, topk, end to end, and the peers (PyTorch where it is installed
# with a CUDA device, Xapian where libxapian is). Tables go to stdout and OUT/*.txt, JSON lines
# to OUT/*.jsonl, plots to OUT/plots.
#
#   bench/all.sh BUILD_DIR DEVICES SCALE OUT
#
# DEVICES: comma list of device specs (P:D), every suite runs each; the first is tuned, and
#          the tuning file (OUT/tuning.json) is then in force for every later suite.
# SCALE:   pocl  sizes for the 2-core development machine (minutes);
#          gpu   sizes for an H100 (inputs far larger than its 50 MB L2).
# Environment: SKIP="suite ..." leaves suites out (tune copy scan decode intersect score topk
# e2e torch xapian); DOCS overrides the generated collection's size for decode and e2e;
# E2E_CPU names CPU devices for the end-to-end comparison at small batches (with ref).
set -euo pipefail
build=${1:?usage: bench/all.sh BUILD_DIR DEVICES SCALE OUT}
devices=${2:?DEVICES}
scale=${3:?SCALE (pocl or gpu)}
out=${4:?OUT}
src=$(cd "$(dirname "$0")/.." && pwd)
cls=$build/clsearch
mkdir -p "$out/plots"
skip=" ${SKIP:-} "
want() { [[ "$skip" != *" $1 "* ]]; }
first=${devices%%,*}
case $scale in
  pocl) docs=${DOCS:-20000} queries=2000 scanlog=16,20,22 r=5
        inter="--short 1000 --ratios 1,10,100,1000 --batch 1,64,1024 --mib 256"
        score="--cands 1e3,1e5,1e6 --mib 256" topk="1024x10000:10,1x1000000:10,64x10000:1000,16384x100:10,1x100000:10000,1024x10000:1"
        e2eb=1,16,256,1024 tq=--quick copyo="--mib 256 -r 5" ;;
  gpu)  docs=${DOCS:-2000000} queries=20000 scanlog=20,24,28 r=10
        inter="--short 1000,10000 --ratios 1,10,100,1000 --batch 1,64,1024,16384 --mib 8192"
        score="--cands 1e3,1e4,1e5,1e6,1e7,1e8 --mib 8192" topk="1024x100000:10,1x25000000:10,1024x100000:1000,16384x1000:10,1x1000000:10000,1024x100000:1"
        e2eb=1,16,256,1024,4096,16384 tq= copyo= ;;
  *) echo "bench/all.sh: SCALE is pocl or gpu" >&2; exit 2 ;;
esac
commit=${CLSEARCH_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}
export CLSEARCH_COMMIT=$commit
echo "== bench/all.sh $devices $scale: commit $commit, $(date -u +%Y-%m-%dT%H:%MZ), host $(uname -n), $(nproc) cores"
"$cls" devices -v | tee "$out/devices.txt"
run() { # name command...: table to stdout and OUT/name.txt
  local name=$1; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.txt"
}
if want tune; then
  run tune "$cls" tune -d "$first" -o "$out/tuning.json" $tq --json "$out/tune.jsonl"
  export CLSEARCH_TUNING=$out/tuning.json
  "$cls" devices -v | sed -n '/kernel parameters in force/,$p'
fi
# Each device against its own copy ceiling (bytes read + written by a plain copy kernel).
ceiling_of() { sed -n 's/.*"gbytes_per_s_median":\([0-9.]*\).*"ceiling":true.*/\1/p' "$out/copy-$1.jsonl" 2>/dev/null | tail -1; }
gen=$out/gen-$docs
if want decode || want e2e; then
  if [ ! -f "$gen/bp.128.idx" ]; then # the generated collection, straight into an index
    mkdir -p "$gen"
    "$cls" generate --index "$gen/bp.128.idx" --topics "$gen/topics.tsv" --docs "$docs" --queries "$queries" -v
  fi
  idx=("$gen/bp.128.idx")
  for v in raw:128 pfor:128 optpfd:128 rice:128 bp:64 bp:256 bp:512; do
    c=${v%%:*} b=${v#*:}
    [ -f "$gen/$c.$b.idx" ] || "$cls" recode "$gen/bp.128.idx" -o "$gen/$c.$b.idx" --codec "$c" --block "$b"
    idx+=("$gen/$c.$b.idx")
  done
fi
for dev in ${devices//,/ }; do
  d=${dev//:/-}
  want copy && run "copy-$d" "$cls" bench copy -d "$dev" $copyo --json "$out/copy-$d.jsonl"
  ceiling=$(ceiling_of "$d")
  ceiling=${ceiling:-2800}
  echo "== $dev: copy ceiling $ceiling GB/s"
  want scan && run "scan-$d" "$cls" bench scan -d "$dev" --log2 "$scanlog" -r "$r" --ceiling "$ceiling" \
    --json "$out/scan.jsonl"
  want decode && run "decode-$d" "$cls" bench decode -d "ref,$dev" -r "$r" --select 1,0.05 --algo all \
    --ceiling "$ceiling" --json "$out/decode.jsonl" --plot "$out/plots/$d" "${idx[@]}"
  want intersect && run "intersect-$d" "$cls" bench intersect -d "$dev" -r "$r" $inter --ceiling "$ceiling" \
    --json "$out/intersect.jsonl"
  want score && run "score-$d" "$cls" bench score -d "$dev" -r "$r" $score --ceiling "$ceiling" --json "$out/score.jsonl"
  want topk && run "topk-$d" "$cls" bench topk -d "$dev" -r "$r" -c "$topk" --ceiling "$ceiling" --json "$out/topk.jsonl"
done
# The whole engine: the devices at every batch size; the reference engine and any CPU devices
# named in E2E_CPU (the best CPU path: the same kernels on POCL over all cores) at the
# batch sizes a CPU finishes in seconds.
if want e2e; then
  run e2e "$cls" bench e2e -x "$gen/bp.128.idx" -q "$gen/topics.tsv" -d "$devices" -m or,and \
    -k 10,100,1000 -b "$e2eb" --seconds 1 --json "$out/e2e.jsonl" --plot "$out/plots"
  run e2e-cpu "$cls" bench e2e -x "$gen/bp.128.idx" -q "$gen/topics.tsv" -d "ref${E2E_CPU:+,$E2E_CPU}" -m or,and \
    -k 10 -b 1,16,256 --seconds 1 --json "$out/e2e.jsonl"
fi
if want torch; then
  echo "== torch peers"
  python3 "$src/bench/peers_torch.py" --json "$out/torch.jsonl" --topk "$topk" $inter 2>&1 | tee "$out/torch.txt" || true
fi
if want xapian; then
  echo "== xapian peers"
  CLSEARCH_NO_DEPS=${CLSEARCH_NO_DEPS:-0} "$src/bench/peers.sh" -B "$build-peers" -d "$first" -k 10,1000 \
    -o "$out/peers" 2>&1 | tee "$out/xapian.txt" || true
fi
echo "== done: $out"
