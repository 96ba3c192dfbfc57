#!/bin/sh
# Effectiveness, identical across codecs. CACM, Cranfield, MED and CISI are each indexed with
# every codec (block sizes and pfor depths varied), searched (OR, 1000 hits, BM25 k1 0.9 b 0.4)
# with the reference engine and on the device; every run must be byte-identical to the first
# (bp, block 128, reference engine). MAP and nDCG@10 come from a trec_eval-compatible package
# and must match this project's recorded figures (docs/EFFECTIVENESS.md) to 4 decimals; CACM's
# MAP must also be within 0.005 of Anserini's 0.3123.
#   effectiveness.sh CLSEARCH SOURCE_DIR DATA_DIR TMP_DIR [DEVICE]
# Prints one table line per collection. A collection whose files are absent is skipped, each
# absent file named, and the test then exits 77 (skipped) unless another collection failed:
# a partial run never reports a plain pass.
set -eu
cls=$1 src=$2 data=$3 tmp=$4 device=${5:-cpu}
mkdir -p "$tmp/eff"
t=$tmp/eff
# CLS_EFF_NO_EVAL=1 (hosts without PyPI): compare the runs only, no MAP or nDCG
noeval=${CLS_EFF_NO_EVAL:-0}
if [ "$noeval" != 1 ]; then
  # pyenv.sh prints the venv's python last; when it fails (no PyPI) it has said why
  py=$("$src/tools/pyenv.sh" "$tmp/../pyenv") || {
    echo "effectiveness: the evaluation's Python package is missing (above); CLS_EFF_NO_EVAL=1 compares the runs alone" >&2
    exit 1
  }
  py=$(printf '%s\n' "$py" | tail -1)
fi
variants="bp:128:1 raw:64:1 pfor:128:1 pfor:512:2 pfor:64:0 optpfd:256:1 rice:512:1 rice:64:1"
status=0 skipped=0
printf '%-10s %6s %7s %7s %9s %s\n' collection docs queries MAP nDCG@10 variants
# name format corpus topics qrels qrels-format expected-MAP expected-nDCG@10
while read -r name fmt corpus topics qrels qfmt want_map want_ndcg; do
  absent=0
  for f in "$corpus" "$topics" "$qrels"; do
    if [ ! -e "$data/$f" ]; then
      echo "SKIP: $data/$f is absent"
      absent=1
    fi
  done
  if [ $absent = 1 ]; then
    skipped=$((skipped + 1))
    continue
  fi
  first=""
  for v in $variants; do
    codec=${v%%:*} rest=${v#*:} block=${rest%%:*} depth=${rest#*:}
    idx=$t/$name.$codec.$block.$depth.idx
    "$cls" index -q -c "$fmt" --codec "$codec" --block "$block" --pfor-depth "$depth" -o "$idx" "$data/$corpus"
    for d in ref "$device"; do
      run=$t/$name.$codec.$block.$depth.$d.run
      "$cls" search -x "$idx" -q "$data/$topics" -k 1000 -d "$d" -o "$run"
      if [ -z "$first" ]; then
        first=$run
      elif ! cmp -s "$first" "$run"; then
        echo "FAIL $name: $codec block $block depth $depth on $d differs from $(basename "$first")"
        "$cls" compare "$first" "$run" || true
        status=1
      fi
    done
  done
  # byte-identical runs prove nothing if they are empty (with CLS_EFF_NO_EVAL no MAP would tell)
  if [ ! -s "$first" ]; then
    echo "FAIL $name: the run $(basename "$first") is empty"
    status=1
  fi
  if [ "$noeval" = 1 ]; then
    out=$(printf 'map all -\nndcg_cut_10 all -\n')
    want_map=-
  else
    out=$("$py" "$src/tools/eval.py" --qrels-format "$qfmt" "$data/$qrels" "$first" -m map -m ndcg_cut_10)
  fi
  map=$(echo "$out" | awk '$1 == "map" {print $3}')
  ndcg=$(echo "$out" | awk '$1 == "ndcg_cut_10" {print $3}')
  docs=$("$cls" stats "$t/$name.bp.128.1.idx" | awk '$1 == "documents" {print $2}')
  nq=$(cut -d' ' -f1 "$first" | sort -u | wc -l)
  printf '%-10s %6s %7s %7s %9s %s\n' "$name" "$docs" "$nq" "$map" "$ndcg" "$(echo $variants | wc -w) codec variants x (ref, $device): identical"
  if [ "$want_map" != "-" ] && { [ "$map" != "$want_map" ] || [ "$ndcg" != "$want_ndcg" ]; }; then
    echo "FAIL $name: MAP $map nDCG@10 $ndcg, recorded $want_map $want_ndcg"
    status=1
  fi
  if [ "$name" = cacm ] && [ "$noeval" != 1 ]; then
    "$py" "$src/tools/eval.py" "$data/$qrels" "$first" -m map --min-map 0.3073 --max-map 0.3173 >/dev/null ||
      { echo "FAIL cacm: MAP $map is not within 0.005 of Anserini's 0.3123"; status=1; }
  fi
done <<EOT
cacm html cacm/cacm.tar.gz cacm/topics.cacm.txt cacm/qrels.cacm.txt trec 0.3129 0.4535
cranfield smart cranfield/cran.all.1400 cranfield/cran.qry cranfield/cranqrel cranfield 0.2924 0.3537
med smart med/MED.ALL med/MED.QRY med/MED.REL trec 0.5097 0.6643
cisi smart cisi/CISI.ALL cisi/CISI.QRY cisi/CISI.REL cisi 0.1984 0.3597
EOT
[ $status = 0 ] || exit $status
if [ $skipped -gt 0 ]; then
  echo "SKIP: $skipped of the 4 collections not run (absent files named above)"
  exit 77
fi
exit 0
