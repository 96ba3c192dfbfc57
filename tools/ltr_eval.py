#!/usr/bin/env python3
"""Does a second ranking stage over `clsearch features` help? LambdaMART (LightGBM) against BM25 on
the real collections, with cross-validation over queries. This is an evaluation, not a test: it
prints figures for docs/EFFECTIVENESS.md and checks nothing but that `clsearch predict` ranks as
LightGBM does.

Pinned versions (the models, hence the figures, depend on them):
    python3 -m venv /tmp/ltrevalvenv
    /tmp/ltrevalvenv/bin/pip install lightgbm==4.5.0 numpy==2.4.6 scipy==1.17.1 pytrec-eval-terrier==0.5.11
    /tmp/ltrevalvenv/bin/python tools/ltr_eval.py build/clsearch ../shared/data /tmp/ltr-eval

(pytrec-eval-terrier 0.5.11 is what tools/pyenv.sh installs for tools/eval.py, whose qrels and
run readers this script reuses.)

Per collection (CACM, Cranfield, MED, CISI, as tests/effectiveness.sh reads them):
  1. `clsearch index` builds the index (default codec) and `clsearch features -k DEPTH -d ref`
     writes the first stage's top DEPTH per topic (BM25 k1 0.9, b 0.4, OR) with its features and
     the qrels label. Cranfield's and CISI's qrels are first rewritten as TREC qrels with
     tools/eval.py's readers (Cranfield: grades 1-4 as gains 4-1, -1 as 0; CISI: every pair 1).
  2. The judged queries (in the qrels and with at least one candidate) are dealt into FOLDS folds
     by a seeded permutation. For each fold, LightGBM lambdarank is trained on the others' rows
     with the fixed PARAMS below (no early stopping, no validation set: nothing is tuned on the
     held-out queries) and scores the fold's rows.
  3. Two TREC runs over the same held-out queries and the same candidates: `bm25` (the first
     stage's order) and `lambdamart` (model score descending, ties in the first stage's order).
     Each run's score column is DEPTH - rank, so that pytrec_eval (which re-sorts by score and
     breaks ties by docno) evaluates exactly the order written. Both runs hold the same
     documents per query: only the order differs, and the depth's recall bounds both.
  4. pytrec_eval gives nDCG@10 and MAP (at the depth: AP's denominator is every relevant
     document in the qrels, as trec_eval's) per query, pooled over the folds (each query is
     scored by the one model that did not see it). Differences are tested per query, paired:
     a two-sided randomization test (sign flips of the per-query differences, RANDOMIZATIONS
     draws, seeded) and a paired t-test.
  5. The check of the engine's evaluator: the first fold's model is saved as LightGBM text and
     `clsearch predict -m MODEL` scores the fold's feature lines; its order (same tie rule) is
     compared with LightGBM's predictions position by position. Expect 0 differences; any
     other count makes the exit status 1 (after the table).

Depth 100, not 1000: re-ranking the top 100 is the usual setting for a learned second stage, and
on these collections 1000 is most of the collection (their sizes are in ../shared/data/README.md),
which would make the "re-ranker" rank nearly everything and swamp the training data with
candidates BM25 itself puts far down. MAP here is MAP at depth 100, so BM25's MAP is a little below
the 1000-hit figures recorded in docs/EFFECTIVENESS.md.

Every feature value is read as a float (as `clsearch predict` reads it, and as the engine
computes it), so LightGBM, which works in double, trains and predicts on the same values the
engine's evaluator sees.

Usage: ltr_eval.py CLSEARCH DATA_DIR WORK_DIR [--collections cacm,cranfield,med,cisi]
                   [--depth 100] [--folds 5] [--seed 31] [--predict-device ref]
WORK_DIR receives the indexes, features, models and runs (NAME.bm25.run, NAME.lambdamart.run).
"""
import argparse
import importlib.metadata
import importlib.util
import os
import subprocess
import sys

import lightgbm as lgb
import numpy as np
import pytrec_eval
import scipy
import scipy.stats

assert lgb.__version__ == "4.5.0", lgb.__version__
assert np.__version__ == "2.4.6", np.__version__
assert scipy.__version__ == "1.17.1", scipy.__version__
PYTREC_EVAL = importlib.metadata.version("pytrec-eval-terrier")
assert PYTREC_EVAL == "0.5.11", PYTREC_EVAL

TREES = 100
# LambdaMART, fixed: TREES trees of at most 15 leaves, learning rate 0.05, at least 5 rows a leaf,
# no bagging or feature sampling, one thread and deterministic, so a rerun gives the same models.
PARAMS = {
    "objective": "lambdarank",
    "num_leaves": 15,
    "learning_rate": 0.05,
    "min_data_in_leaf": 5,
    "metric": "none",
    "seed": 31,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbosity": -1,
}
RANDOMIZATIONS = 100_000
MEASURES = ("ndcg_cut_10", "map")

# name, corpus format, corpus, topics, qrels, qrels format (tools/eval.py's), as tests/effectiveness.sh
COLLECTIONS = {
    "cacm": ("html", "cacm/cacm.tar.gz", "cacm/topics.cacm.txt", "cacm/qrels.cacm.txt", "trec"),
    "cranfield": ("smart", "cranfield/cran.all.1400", "cranfield/cran.qry", "cranfield/cranqrel", "cranfield"),
    "med": ("smart", "med/MED.ALL", "med/MED.QRY", "med/MED.REL", "trec"),
    "cisi": ("smart", "cisi/CISI.ALL", "cisi/CISI.QRY", "cisi/CISI.REL", "cisi"),
}


def load_eval_helpers():
    """tools/eval.py as a module: its qrels readers (three layouts) and its TREC run reader."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval.py")
    spec = importlib.util.spec_from_file_location("clsearch_eval", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_cls(cls, *args):
    r = subprocess.run([cls, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ltr_eval.py: clsearch {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def read_features(path):
    """The feature lines as (qids, docnos, labels, X, raw lines) in file (rank) order; X has a
    column per SVMlight index as written (column 0 unused), values rounded to float."""
    qids, docnos, labels, rows, lines = [], [], [], [], []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            body, _, comment = line.partition("#")
            tok = body.split()
            cmt = comment.split()
            labels.append(int(tok[0]))
            qid = tok[1][len("qid:"):]
            # a non-numeric qid is written as its topic's place with the qid after the docno
            qids.append(cmt[1] if len(cmt) > 1 else qid)
            docnos.append(cmt[0])
            rows.append({int(k): float(v) for k, v in (t.split(":") for t in tok[2:])})
            lines.append(line)
    ncols = 1 + max(max(r) for r in rows)
    X = np.zeros((len(rows), ncols), dtype=np.float32)
    for i, r in enumerate(rows):
        for k, v in r.items():
            X[i, k] = v
    return np.array(qids), docnos, np.array(labels), X.astype(np.float64), lines


def ranked(qids, docnos, scores, keep):
    """{qid: [docno, ...]} for the rows in keep, per query by score descending, ties in row (first
    stage) order; scores None is the first stage's order itself."""
    out = {}
    for i in np.flatnonzero(keep):
        out.setdefault(qids[i], []).append(i)
    for q, idx in out.items():
        if scores is not None:
            idx = sorted(idx, key=lambda i: (-scores[i], i))
        out[q] = [docnos[i] for i in idx]
    return out


def write_run(path, order, tag, depth):
    with open(path, "w") as f:
        for q in sorted(order, key=lambda q: (len(q), q)):
            for r, d in enumerate(order[q]):
                f.write(f"{q} Q0 {d} {r + 1} {depth - r} {tag}\n")


def randomization_p(diff, rng):
    """Two-sided paired randomization test: the share of sign flips whose mean difference is at
    least as far from 0 as the observed one."""
    diff = np.asarray(diff)
    if not diff.any():
        return 1.0
    signs = rng.choice((-1.0, 1.0), size=(RANDOMIZATIONS, diff.size))
    null = np.abs(signs @ diff) / diff.size
    return (1 + np.count_nonzero(null >= abs(diff.mean()) - 1e-12)) / (RANDOMIZATIONS + 1)


def evaluate_collection(name, args, ev):
    fmt, corpus, topics, qrels_path, qfmt = COLLECTIONS[name]
    data = lambda p: os.path.join(args.data, p)
    for p in (corpus, topics, qrels_path):
        if not os.path.exists(data(p)):
            print(f"SKIP {name}: {data(p)} is absent")
            return None
    work = lambda s: os.path.join(args.work, f"{name}.{s}")
    qrels = ev.parse_qrels(data(qrels_path), qfmt)
    with open(work("qrels"), "w") as f:  # TREC qrels, as `clsearch features` reads them
        for q, docs in qrels.items():
            for d, rel in docs.items():
                f.write(f"{q} 0 {d} {rel}\n")
    for s in ("idx", "svm"):
        if os.path.exists(work(s)):
            os.remove(work(s))
    run_cls(args.clsearch, "index", "-q", "-c", fmt, "-o", work("idx"), data(corpus))
    run_cls(args.clsearch, "features", "-x", work("idx"), "-q", data(topics), "--qrels", work("qrels"),
            "-k", str(args.depth), "-d", "ref", "-o", work("svm"))
    qids, docnos, y, X, lines = read_features(work("svm"))

    judged = sorted({q for q in qids if q in qrels}, key=lambda q: (len(q), q))
    unretrieved = sorted(set(qrels) - set(qids))
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(judged))
    fold_of = {judged[j]: f for f in range(args.folds) for j in perm[f::args.folds]}
    fold = np.array([fold_of.get(q, -1) for q in qids])

    scores = np.zeros(len(qids))
    predict_diffs = None
    for f in range(args.folds):
        train, test = (fold >= 0) & (fold != f), fold == f
        # lines per query, in file order: each query's lines are contiguous
        _, first, counts = np.unique(qids[train], return_index=True, return_counts=True)
        group = counts[np.argsort(first)]
        booster = lgb.train(PARAMS, lgb.Dataset(X[train], y[train], group=group, params={"verbosity": -1}),
                            num_boost_round=TREES)
        scores[test] = booster.predict(X[test], raw_score=True)
        if f == 0:
            predict_diffs = check_predict(name, args, booster, lines, qids, docnos, scores, test, work)

    runs = {}
    for tag, s in (("bm25", None), ("lambdamart", scores)):
        write_run(work(f"{tag}.run"), ranked(qids, docnos, s, fold >= 0), tag, args.depth)
        runs[tag], _ = ev.parse_run(work(f"{tag}.run"))
    evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in judged}, set(MEASURES))
    per_query = {tag: evaluator.evaluate(run) for tag, run in runs.items()}
    assert set(per_query["bm25"]) == set(per_query["lambdamart"]) == set(judged)

    result = {"name": name, "queries": len(judged), "unretrieved": len(unretrieved),
              "rows": int(np.count_nonzero(fold >= 0)), "predict_diffs": predict_diffs}
    test_rng = np.random.default_rng(args.seed)
    for m in MEASURES:
        a = np.array([per_query["bm25"][q][m] for q in judged])
        b = np.array([per_query["lambdamart"][q][m] for q in judged])
        d = b - a
        result[m] = (a.mean(), b.mean(), randomization_p(d, test_rng),
                     scipy.stats.ttest_rel(b, a).pvalue if d.any() else 1.0,
                     int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0)))
    return result


def check_predict(name, args, booster, lines, qids, docnos, scores, test, work):
    """The held-out fold's lines through `clsearch predict`: how many (query, position) places
    its order puts a different document than LightGBM's."""
    booster.save_model(work("fold0.model"))
    with open(work("fold0.svm"), "w") as f:
        f.writelines(lines[i] for i in np.flatnonzero(test))
    out = run_cls(args.clsearch, "predict", "-m", work("fold0.model"), "-d", args.predict_device, work("fold0.svm"))
    engine = np.zeros(len(qids))
    engine[test] = [float(v) for v in out.split()]
    mine, theirs = ranked(qids, docnos, scores, test), ranked(qids, docnos, engine, test)
    diffs = sum(a != b for q in mine for a, b in zip(mine[q], theirs[q]))
    worst = float(np.max(np.abs(engine[test] - scores[test])))
    return diffs, int(np.count_nonzero(test)), worst


def main():
    ap = argparse.ArgumentParser(description="LambdaMART over clsearch features against BM25 (see the docstring).")
    ap.add_argument("clsearch")
    ap.add_argument("data", help="the shared data folder (../shared/data)")
    ap.add_argument("work", help="a folder for indexes, features, models and runs")
    ap.add_argument("--collections", default="cacm,cranfield,med,cisi")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--predict-device", default="ref", help="clsearch predict's -d (ref: plain C; cpu, gpu: the kernel)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ev = load_eval_helpers()

    results = []
    for name in args.collections.split(","):
        if name not in COLLECTIONS:
            sys.exit(f"ltr_eval.py: unknown collection {name!r} ({', '.join(COLLECTIONS)})")
        r = evaluate_collection(name, args, ev)
        if r:
            results.append(r)
    if not results:
        sys.exit("ltr_eval.py: no collection found")

    print(f"LambdaMART (LightGBM {lgb.__version__}: {TREES} trees, {PARAMS['num_leaves']} leaves, "
          f"learning rate {PARAMS['learning_rate']}, min_data_in_leaf {PARAMS['min_data_in_leaf']}) re-ranking "
          f"BM25's top {args.depth}; {args.folds}-fold cross-validation over queries (seed {args.seed}); "
          f"pytrec_eval (pytrec-eval-terrier {PYTREC_EVAL})")
    print(f"p: paired two-sided randomization test ({RANDOMIZATIONS} sign flips) / paired t-test; "
          f"+/-: queries better/worse")
    head = (f"{'collection':<10} {'queries':>7}  {'nDCG@10 BM25':>12} {'LTR':>6} {'delta':>7} {'p rand':>7} "
            f"{'p t':>7} {'+/-':>7}  {'MAP BM25':>8} {'LTR':>6} {'delta':>7} {'p rand':>7} {'p t':>7} {'+/-':>7}")
    print(head)

    def cols(m):
        a, b, pr, pt, up, down = m
        return f"{a:>6.4f} {b:>6.4f} {b - a:>+7.4f} {pr:>7.4f} {pt:>7.4f} {f'{up}/{down}':>7}"

    for r in results:
        print(f"{r['name']:<10} {r['queries']:>7}  {'':>6}{cols(r['ndcg_cut_10'])}  {'':>2}{cols(r['map'])}")
    if len(results) > 1:
        mean = {m: np.mean([[r[m][0], r[m][1]] for r in results], axis=0) for m in MEASURES}
        line = f"{'mean':<10} {sum(r['queries'] for r in results):>7}  "
        for m, pad in zip(MEASURES, ("", "  ")):
            a, b = mean[m]
            line += f"{pad}{'':>6}{a:>6.4f} {b:>6.4f} {b - a:>+7.4f} {'':>7} {'':>7} {'':>7}"
        print(line.rstrip() + "   (mean of the collections' means)")
    print()
    for r in results:
        diffs, n, worst = r["predict_diffs"]
        extra = f"; {r['unretrieved']} judged queries without candidates left out" if r["unretrieved"] else ""
        print(f"{r['name']}: {r['rows']} candidate rows; clsearch predict -d {args.predict_device} on fold 0 "
              f"({n} rows): {diffs} rank differences from LightGBM, largest score difference {worst:.3g}{extra}")
    if any(r["predict_diffs"][0] for r in results):
        print("ltr_eval.py: clsearch predict ranks differently from LightGBM (above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
