#!/bin/sh
# The second ranking stage's model fixtures (tests/test_rerank.c, test_cli, test_serve, the Python
# test): small models trained on `clsearch features` of CACM, so their feature ids are the feature
# table's columns (1-based, as features writes them and `search --rerank` reads them). Nothing is
# trained at test time; these files are committed.
#
# Pinned versions (as tools/ltr_fixtures.py):
#   python3 -m venv /tmp/ltrvenv
#   /tmp/ltrvenv/bin/pip install lightgbm==4.5.0 xgboost==2.1.3 numpy==2.4.6 scipy==1.17.1
#   tools/ltr_rerank_fixtures.sh build-h/clsearch ../shared/data tests/data/ltr
#
# Output, in OUT:
#   cacm_lgb.txt   LightGBM lambdarank, 12 trees of at most 7 leaves
#   cacm_xgb.json  XGBoost rank:ndcg, 12 trees of depth 3
# both over CACM's top 50 per topic (OR, BM25 0.9 / 0.4) with CACM's qrels.
set -eu
cls=$1 data=$2 out=$3
py=${LTR_PYTHON:-/tmp/ltrvenv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cls" index -q -c html -o "$tmp/cacm.idx" "$data/cacm/cacm.tar.gz"
"$cls" features -x "$tmp/cacm.idx" -q "$data/cacm/topics.cacm.txt" --qrels "$data/cacm/qrels.cacm.txt" -k 50 \
  -d ref -o "$tmp/cacm.svm"
"$py" - "$tmp/cacm.svm" "$out" <<'PY'
import sys
import lightgbm as lgb
import numpy as np
import xgboost as xgb

assert lgb.__version__ == "4.5.0", lgb.__version__
assert xgb.__version__ == "2.1.3", xgb.__version__
svm, out = sys.argv[1], sys.argv[2]
rows, labels, groups, last = [], [], [], None
for line in open(svm):
    line = line.split("#", 1)[0].split()
    if not line:
        continue
    labels.append(float(line[0]))
    qid = line[1]
    if qid != last:
        groups.append(0)
        last = qid
    groups[-1] += 1
    row = {}
    for tok in line[2:]:
        k, v = tok.split(":")
        row[int(k)] = np.float32(float(v))
    rows.append(row)
width = max(max(r) for r in rows) + 1
X = np.zeros((len(rows), width), dtype=np.float64)
for i, r in enumerate(rows):
    for k, v in r.items():
        X[i, k] = v
y = np.array(labels)
params = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.2, "min_data_in_leaf": 20,
          "verbose": -1, "deterministic": True, "num_threads": 1, "seed": 1}
ds = lgb.Dataset(X, y, group=groups)
lgb.train(params, ds, num_boost_round=12).save_model(out + "/cacm_lgb.txt")
dm = xgb.DMatrix(X, y)
dm.set_group(groups)
xgb.train({"objective": "rank:ndcg", "max_depth": 3, "eta": 0.2, "nthread": 1, "seed": 1}, dm,
          num_boost_round=12).save_model(out + "/cacm_xgb.json")
print("trained on", len(rows), "candidates of", len(groups), "topics,", width - 1, "features")
PY
