#!/bin/bash
# One GPU-host call for the engine's record beside its peers, sections by priority, each
# guarded by the time it has left (a device call runs 10 minutes at most): the index builder on
# 1 GB of generated JSONL (16 threads, host and device encoding, compared byte for byte) against
# Tantivy; bench encode; the hybrid engine against the GPU alone on 1M documents and gov2; the
# second ranking stage end to end on gov2 (1,000 trees, depth 1000; a lone query at depth 1000
# and 10000); 10,000 trees on 4 M x 136 rows; real text (linux-doc-6.1) both ways.
# From the repository root on the GPU host, after . .device/env.sh:
#   OUT=DIR PEERS=path/to/peers.py TEXT_DEB=path/to/linux-doc-6.1_*.deb bash bench/gpu_call.sh
# PEERS: ../shared/tools/peers/peers.py copied into a folder that travels (default
# .device/peers/peers.py), with the Tantivy wheel in .whl (peers' README); TEXT_DEB unset or
# absent skips the real text. Python 3 with numpy runs bench/peers_trees.py's model writer.
set -u
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; lscpu | grep "Model name"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || cat .device/commit 2>/dev/null || echo unknown)"
PEERS=${PEERS:-.device/peers/peers.py}
TEXT_DEB=${TEXT_DEB:-$(ls .device/text/linux-doc-6.1_*.deb 2>/dev/null | head -1)}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
(cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_TESTS=OFF -DCLSEARCH_CIFF=OFF >/tmp/cfg.log 2>&1 &&
 cmake --build /tmp/b -j16 --target clsearch >/tmp/build.log 2>&1; echo "build rc $?") &
(python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/tmp/pip.log 2>&1; echo "pip rc $?") &
wait
export PYTHONPATH=/tmp/site
B=/tmp/b/clsearch
[ -x $B ] || { tail -30 /tmp/build.log; exit 1; }
G=$($B devices --json | python3 -c 'import sys,json; print([d["id"] for d in map(json.loads, sys.stdin) if d["type"]=="gpu"][0])')
echo "one GPU: $G [$(el) s]"
F="^(host|all|[0-9]+:|engine|  stages)"
# ---- issue 32: the builder on 1.08 GB of generated JSONL, 16 threads, host and GPU encoding; Tantivy
t0=$(date +%s); $B generate -o /tmp/gen --docs 1000000 --queries 10000 >/dev/null 2>&1; echo "generate 1M JSONL $(( $(date +%s) - t0 )) s"
cat /tmp/gen/corpus.jsonl >/dev/null
for d in host $G; do
  o=(); [ $d != host ] && o=(-d $d)
  /usr/bin/time -f "wall %e s, max RSS %M KB" $B index -v -c jsonl --threads 16 "${o[@]}" -o /tmp/m1-$d.idx /tmp/gen/corpus.jsonl 2>&1 | grep -vE "^\s*$" | tail -25 | sed "s/^/[$d] /"
done
cmp /tmp/m1-host.idx /tmp/m1-$G.idx && echo "index -d $G: byte-identical to the host's"
echo "== Tantivy, 16 threads [$(el) s]"
timeout 90 python3 "$PEERS" /tmp/gen/corpus.jsonl /tmp/gen/topics.tsv --engines tantivy --threads 16 --index-only \
  --index-dir /tmp/pidx --out $OUT/tantivy.jsonl 2>&1 | grep -iE "index|tantivy|MB" | tail -6
left 200 && { echo "== the builder, 4 threads [$(el) s]"; $B index -v -c jsonl --threads 4 -o /tmp/m1-4.idx /tmp/gen/corpus.jsonl 2>&1 | grep -E "^indexed|stage|peak" | head -12; cmp /tmp/m1-4.idx /tmp/m1-host.idx && echo same bytes; rm -f /tmp/m1-4.idx; }
echo "== bench encode, bp 128 [$(el) s]"
timeout 60 $B bench encode -x /tmp/m1-host.idx -d $G -t 1,16 -r 3 --layout bp:128,pfor:128:1 2>&1 | tail -12
# ---- issue 30: the hybrid engine (split only where it pays) against the GPU alone
echo "== hybrid, 1M [$(el) s]"
timeout 90 $B bench e2e -x /tmp/m1-host.idx -q /tmp/gen/topics.tsv -d $G,all -m and,or -k 10 -b 4096 --seconds 2 2>&1 | grep -E "$F"
head -4096 /tmp/gen/topics.tsv > /tmp/t4k.tsv; $B search -x /tmp/m1-host.idx -q /tmp/t4k.tsv -d all -m and -k 10 -v -o /tmp/t4k.run 2>&1 | grep -iE "split|executor|host" | head -8
echo "== gov2 [$(el) s]"
t0=$(date +%s); $B generate -q --index /tmp/gov2.idx --topics /tmp/gov2.tsv --scale gov2 --queries 8192; echo "generate gov2 $(( $(date +%s) - t0 )) s"
timeout 80 $B bench e2e -x /tmp/gov2.idx -q /tmp/gov2.tsv -d $G,all -m and,or -k 10 -b 4096 --seconds 2 2>&1 | grep -E "$F"
# ---- issue 31: BM25 top 1000 -> features -> 1,000 trees -> top 10 on gov2; a lone query at depth 1000 and 10000
echo "== rerank on gov2 [$(el) s]"
python3 bench/peers_trees.py --out /tmp/rrm --model-only --cols 35 --first-feature 1 --trees 1000 >/dev/null
timeout 90 $B bench e2e -x /tmp/gov2.idx -q /tmp/gov2.tsv -d $G -m or,and -k 10 -b 1024,4096 --seconds 2 --rerank /tmp/rrm/lgb-1000.txt --stages 2>&1 | grep -E "$F"
for depth in 1000 10000; do
  left 470 && timeout 40 $B bench e2e -x /tmp/gov2.idx -q /tmp/gov2.tsv -d $G -m or,and -k 10 -b 1 --seconds 2 --rerank /tmp/rrm/lgb-1000.txt --rerank-depth $depth --stages 2>&1 | grep -E "$F" | sed "s/^/depth $depth: /"
done
# ---- issue 31: 10,000 trees of 64 leaves on 4 M x 136 rows (XGBoost's 10,000-tree figure is the earlier call's)
if left 480; then
  echo "== trees 10000 [$(el) s]"
  python3 -c "import numpy as np; np.random.default_rng(1).random((4000000,136),dtype=np.float32).tofile('/tmp/rows.f32')"
  python3 bench/peers_trees.py --out /tmp/t10k --model-only --cols 136 --trees 10000 >/dev/null
  timeout 60 $B bench trees -m /tmp/t10k/lgb-10000.txt --rows /tmp/rows.f32 --cols 136 -d $G -r 5 --check 2000 --variants 1:64:1:1:8,1:64:1:1:16 2>&1 | tail -6
fi
# ---- issue 32: real text, linux-doc-6.1 (stemming on)
if left 520 && [ -n "$TEXT_DEB" ] && [ -f "$TEXT_DEB" ]; then
  echo "== linux-doc-6.1 [$(el) s]"
  mkdir -p /tmp/ld && dpkg -x "$TEXT_DEB" /tmp/ld
  for d in host $G; do
    o=(); [ $d != host ] && o=(-d $d)
    $B index -v -c files --threads 16 "${o[@]}" -o /tmp/ld-$d.idx /tmp/ld/usr/share/doc 2>&1 | grep -E "^indexed|peak" | sed "s/^/[$d] /"
  done
  cmp /tmp/ld-host.idx /tmp/ld-$G.idx && echo "linux-doc: byte-identical"
fi
date -u; echo "end [$(el) s]"
