#!/bin/sh
# CACM effectiveness: index, search (OR, 1000 hits, BM25 k1 0.9 b 0.4) on the given device,
# evaluate with a trec_eval-compatible package; MAP must be within 0.005 of Anserini's 0.3123.
set -eu
cls=$1 src=$2 data=$3 tmp=$4 device=${5:-cpu}
absent=0
for f in cacm.tar.gz topics.cacm.txt qrels.cacm.txt; do
  if [ ! -f "$data/cacm/$f" ]; then
    echo "SKIP: $data/cacm/$f is absent"
    absent=1
  fi
done
[ $absent = 0 ] || exit 77
# pyenv.sh prints the venv's python last; when it fails (no PyPI) it has said why
py=$("$src/tools/pyenv.sh" "$tmp/../pyenv") || { echo "cacm_map: the evaluation's Python package is missing (above)" >&2; exit 1; }
py=$(printf '%s\n' "$py" | tail -1)
"$cls" index -c html -o "$tmp/cacm.idx" "$data/cacm/cacm.tar.gz"
"$cls" search -x "$tmp/cacm.idx" -q "$data/cacm/topics.cacm.txt" -d "$device" -o "$tmp/cacm.run" -v
"$py" "$src/tools/eval.py" "$data/cacm/qrels.cacm.txt" "$tmp/cacm.run" -m map -m P_30 -m ndcg_cut_10 \
  --min-map 0.3073 --max-map 0.3173
