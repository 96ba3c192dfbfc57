#!/usr/bin/env python3
"""The learning-to-rank fixtures of tests/test_rank.c: models trained by the libraries themselves
and their own raw predictions, which clsearch's evaluators (src/rank/) must reproduce.

Pinned versions (the models' formats and the predictions depend on them):
    python3 -m venv /tmp/ltrvenv
    /tmp/ltrvenv/bin/pip install lightgbm==4.5.0 xgboost==2.1.3 numpy==2.4.6 scipy==1.17.1
    /tmp/ltrvenv/bin/python tools/ltr_fixtures.py ../shared/data/ltr tests/data/ltr

Input: LightGBM's lambdarank sample (rank.train, rank.test: SVMlight lines, 300 features, the
.query files' group sizes). Feature ids are the SVMlight indices as written (column k is "k:"),
as both libraries' own text readers and `clsearch predict` take them, so the matrices have
max index + 1 columns. The lines are read here, not by sklearn's loader, which shifts 1-based
indices to 0-based.

Output, in OUT:
    lgb_rank.txt   LightGBM lambdarank, 50 trees of 31 leaves, trained with some values NaN
                   (missing type NaN in its splits)
    lgb_reg.txt    LightGBM regression on the labels, zero_as_missing (missing type Zero)
    xgb_rank.json  XGBoost rank:ndcg, 50 trees of depth 6 (absent features are missing)
    xgb_reg.json   XGBoost reg:squarederror, 50 trees of depth 6
    rank-nan.test  the first 200 lines of rank.test with one present value in seven made "nan"
    MODEL.TEST.pred  each model's raw prediction (LightGBM predict(raw_score=True), XGBoost
                   predict(output_margin=True)) on rank.test and rank-nan.test, one a line, %.17g

Every value is rounded to float first (clsearch reads values as floats, and XGBoost does too),
so LightGBM, which works in double, trains on and predicts from the same values.

An absent feature is 0.0 to LightGBM (its sparse predictor reads an absent key as 0) and missing
to XGBoost (a CSR matrix's absent entries are its missing values); an explicit "nan" is missing
to both. The predictions are made from CSR matrices that keep every value written, so both see
exactly what the SVMlight text says.
"""
import math
import os
import sys

import lightgbm as lgb
import numpy as np
import scipy.sparse as sp
import xgboost as xgb

assert lgb.__version__ == "4.5.0", lgb.__version__
assert xgb.__version__ == "2.1.3", xgb.__version__


def read_svmlight(path, ncols=None):
    """(CSR matrix with the indices as written, labels); explicit values are kept, zeros too."""
    data, indices, indptr, labels = [], [], [0], []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            labels.append(float(line[0]))
            for tok in line[1:]:
                if tok.startswith("qid:"):
                    continue
                k, v = tok.split(":")
                indices.append(int(k))
                data.append(float(v))
            indptr.append(len(indices))
    n = ncols if ncols is not None else max(indices) + 1
    # the values as floats, what clsearch's evaluators (and XGBoost) compute with: LightGBM, which
    # reads doubles, then splits the same values (a threshold a double's ulp above a value that is
    # not a float would fall within that value's rounding to float)
    values = np.array(data, dtype=np.float64).astype(np.float32).astype(np.float64)
    m = sp.csr_matrix((values, np.array(indices), np.array(indptr)),
                      shape=(len(labels), n))
    return m, np.array(labels)


def read_groups(path):
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def with_nans(m, every, seed):
    """A copy of m with one present value in `every` made NaN (deterministic)."""
    m = m.copy()
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, every, size=m.data.shape[0]) == 0
    m.data[pick] = np.nan
    return m


def write_svmlight(path, m, labels):
    with open(path, "w") as f:
        for i in range(m.shape[0]):
            row = m.getrow(i)
            parts = ["%g" % labels[i]]
            for k, v in zip(row.indices, row.data):
                parts.append("%d:%s" % (k, "nan" if math.isnan(v) else "%.9g" % v))
            f.write(" ".join(parts) + "\n")


def write_pred(path, p):
    with open(path, "w") as f:
        for v in p:
            f.write("%.17g\n" % float(v))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: ltr_fixtures.py DATA_DIR OUT_DIR")
    data, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    Xtr, ytr = read_svmlight(os.path.join(data, "rank.train"))
    ncols = Xtr.shape[1]
    gtr = read_groups(os.path.join(data, "rank.train.query"))
    Xte, yte = read_svmlight(os.path.join(data, "rank.test"), ncols)

    # rank-nan.test: explicit missing values, read back from the text as clsearch reads them
    Xnan = with_nans(Xte[:200], 7, 2)
    write_svmlight(os.path.join(out, "rank-nan.test"), Xnan, yte[:200])
    Xnan, _ = read_svmlight(os.path.join(out, "rank-nan.test"), ncols)
    tests = {"rank.test": Xte, "rank-nan.test": Xnan}

    common = dict(num_leaves=31, learning_rate=0.1, min_data_in_leaf=20, verbose=-1, seed=1,
                  deterministic=True, num_threads=1)
    Xtr_nan = with_nans(Xtr, 7, 1)
    rank = lgb.train(dict(common, objective="lambdarank"), lgb.Dataset(Xtr_nan, ytr, group=gtr),
                     num_boost_round=50)
    reg = lgb.train(dict(common, objective="regression", zero_as_missing=True), lgb.Dataset(Xtr, ytr),
                    num_boost_round=50)
    for name, b in (("lgb_rank", rank), ("lgb_reg", reg)):
        b.save_model(os.path.join(out, name + ".txt"))
        for tname, X in tests.items():
            write_pred(os.path.join(out, "%s.%s.pred" % (name, tname)), b.predict(X, raw_score=True))

    xcommon = dict(max_depth=6, eta=0.1, tree_method="hist", seed=1, nthread=1)
    dtr = xgb.DMatrix(Xtr, ytr, missing=np.nan)
    dtr.set_group(gtr)
    xrank = xgb.train(dict(xcommon, objective="rank:ndcg"), dtr, num_boost_round=50)
    xreg = xgb.train(dict(xcommon, objective="reg:squarederror"), xgb.DMatrix(Xtr, ytr, missing=np.nan),
                     num_boost_round=50)
    for name, b in (("xgb_rank", xrank), ("xgb_reg", xreg)):
        b.save_model(os.path.join(out, name + ".json"))
        for tname, X in tests.items():
            p = b.predict(xgb.DMatrix(X, missing=np.nan), output_margin=True)
            write_pred(os.path.join(out, "%s.%s.pred" % (name, tname)), p)


if __name__ == "__main__":
    main()
