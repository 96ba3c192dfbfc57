#!/bin/bash
# One GPU-host call for tree-ensemble scoring (issue 31): builds clsearch, unpacks the XGBoost
# 3.4.1 and LightGBM 4.5.0 wheels carried in .whl (their files as one tar.xz, which fits the
# transfer's limit where the two wheels do not: `python3 -m zipfile -e` of each wheel into one
# folder, then tar | xz), runs bench/peers_trees.py on 4 M rows x 136 features for
# 1,000 and 10,000 trees of 64 leaves. Logs under $OUT. Arguments: the clsearch variants for the
# 1,000-tree model, then those for the 10,000-tree one (L:WG:DOCS:LOCAL:TILE,...; empty: the
# bench's defaults), then the tree counts (default 1000,10000).
#
# The device call sends the checkout the session started in, not a helper's worktree: from a
# worktree, put `git archive HEAD | xz` (src.tar.xz), the .device files (env.sh, gpu-env.sh,
# debs/) and .whl/peers-site.tar.xz into one folder of that checkout that git ignores (a
# build-* name), carry it, unpack it under /tmp there and run this script from that copy.
# Both tree counts with the record's 14 + 7 variants ran past a 480 s call (the 10,000-tree
# model's node-walk and global-row variants take about 7 s a run, 11 runs each): give 10,000
# trees a call of its own with the local-memory variants, e.g.
#   bash bench/gpu_trees.sh "" "1:64:1:1:8,1:64:1:1:16,1:64:1:1:0" 10000
set -u
. .device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
date -u; git log --oneline -1 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | head -3
python3 -c "import scipy; print('scipy', scipy.__version__)" || echo "NOTE: scipy missing: LightGBM cannot run"
mkdir -p /tmp/site && tar xJf .whl/peers-site.tar.xz -C /tmp/site || echo "NOTE: unpacking the wheels failed"
export PYTHONPATH=/tmp/site
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCLSEARCH_TESTS=OFF -DCLSEARCH_CIFF=OFF >/dev/null && cmake --build build -j16 >/dev/null || { echo BUILD FAILED; exit 1; }
build/clsearch devices 2>&1 | head -8
build/clsearch bench copy -d gpu --mib 1024 -r 5 2>&1 | tail -3 # the memory-bandwidth ceiling
python3 bench/peers_trees.py --out /tmp/pt --clsearch build/clsearch --device gpu --reps 10 \
    --trees "${3:-1000,10000}" --variants "${1:-}" --variants-large "${2:-}" 2>&1 | tee "$OUT/peers_trees.log" | grep -v '^RESULT'
