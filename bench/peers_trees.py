#!/usr/bin/env python3
"""Tree-ensemble scoring alone against XGBoost's GPU predictor and LightGBM (issue 31's measure).

Pinned: xgboost==3.4.1 and lightgbm==4.5.0 (their manylinux_2_28 wheels, Python 3.12; XGBoost's
carries its CUDA kernels), numpy 2 and cupy 13 as the GPU host has them (printed at the start),
scipy (LightGBM imports it).

  python3 bench/peers_trees.py --out DIR [--rows 4000000] [--cols 136] [--trees 1000,10000]
        [--depth 6] [--seed 1] [--clsearch build/clsearch] [--device 1:0] [--reps 10]
        [--variants L:WG:DOCS:LOCAL:TILE,...] [--no-gpu]

(a) Writes, seeded, DIR/rows.f32 (rows x cols float32, uniform in [0, 1), row-major) and for
    each tree count N, N random complete trees of the given depth (64 leaves at depth 6): at each
    inner node a feature drawn among the columns and a threshold T drawn among that feature's
    quantiles (as float32); leaves k / 1024 for k drawn in [-512, 512]. The same ensemble twice:
    DIR/xgb-N.json, XGBoost's JSON (left when x < T, base score 0) and DIR/lgb-N.txt, LightGBM's
    text (left when x <= the float just below T, as a double: the same test for every float x).
    The leaf values are multiples of 2^-10 of at most 1/2, so every partial sum of up to 2^14 of
    them is exact in float32: the engines' different summation orders and precisions then give
    the same number, and any difference in the check below is a tree taken differently.
(b) Times XGBoost's inplace_predict (device "cuda", the matrix already on the GPU as a cupy
    array, output margins; CUDA events around each call, median of --reps after a warm-up),
    LightGBM's predict (raw scores, num_threads=16, on a subset of rows: median of 3 after a
    warm-up, as documents a second) and `clsearch bench trees` on the same files (its kernel time
    alone, median; the rows' upload apart).
(c) Checks clsearch's raw scores of every row against XGBoost's, and of the subset against
    LightGBM's (max |a - b| / max(1, |b|), must be <= 1e-5), then prints one table: trees, engine,
    documents a second, ratio to XGBoost-GPU.

--no-gpu: XGBoost on the CPU instead (to try the script on a machine without a GPU).
--model-only: (a)'s models alone (no matrix, no timing), their features drawn from
    --first-feature .. cols - 1: a second stage's model for `clsearch bench e2e --rerank` over
    `clsearch features` columns (1 .. 34 on an index without stored fields: --cols 35
    --first-feature 1), thresholds among [0, 1)'s quantiles (a complete tree's walk costs the same
    whatever the values). """
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np


def log(*a):
    print(*a, flush=True)


def make_ensemble(rng, ntrees, depth, qs):
    """Features (ntrees x inner, int), thresholds T (float32) and leaves (ntrees x 2^depth, float32)."""
    inner = (1 << depth) - 1
    cols = qs.shape[1]
    feat = rng.integers(0, cols, size=(ntrees, inner))
    thr = qs[rng.integers(0, qs.shape[0], size=(ntrees, inner)), feat].astype(np.float32)
    leaf = (rng.integers(-512, 513, size=(ntrees, 1 << depth)) / 1024.0).astype(np.float32)
    return feat, thr, leaf


def num(x):
    """A float32 as the shortest decimal that reads back as it (JSON and LightGBM's text)."""
    return repr(float(np.float32(x)))


def write_xgb(path, feat, thr, leaf, cols):
    ntrees, inner = feat.shape
    nleaves = leaf.shape[1]
    n = inner + nleaves
    trees = []
    for t in range(ntrees):
        left = [2 * i + 1 for i in range(inner)] + [-1] * nleaves
        right = [2 * i + 2 for i in range(inner)] + [-1] * nleaves
        cond = [float(v) for v in thr[t]] + [float(v) for v in leaf[t]]
        trees.append({
            "base_weights": [0.0] * inner + [float(v) for v in leaf[t]],
            "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [],
            "default_left": [0] * n, "id": t, "left_children": left,
            "loss_changes": [1.0] * inner + [0.0] * nleaves,
            "parents": [2147483647] + [(i - 1) // 2 for i in range(1, n)],
            "right_children": right, "split_conditions": cond,
            "split_indices": [int(f) for f in feat[t]] + [0] * nleaves,
            "split_type": [0] * n, "sum_hessian": [1.0] * n,
            "tree_param": {"num_deleted": "0", "num_feature": str(cols), "num_nodes": str(n), "size_leaf_vector": "1"},
        })
    model = {
        "learner": {
            "attributes": {}, "feature_names": [], "feature_types": [],
            "gradient_booster": {
                "model": {
                    "cats": {"enc": [], "feature_segments": [], "sorted_idx": []},
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(ntrees)},
                    "iteration_indptr": list(range(ntrees + 1)), "tree_info": [0] * ntrees, "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {"base_score": "[0E0]", "boost_from_average": "1", "num_class": "0",
                                    "num_feature": str(cols), "num_target": "1"},
            "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}},
        },
        "version": [3, 4, 1],
    }
    with open(path, "w") as f:
        json.dump(model, f)


def write_lgb(path, feat, thr, leaf, cols):
    ntrees, inner = feat.shape
    nleaves = leaf.shape[1]
    below = np.nextafter(thr, np.float32(-np.inf), dtype=np.float32)  # x <= below  <=>  x < T
    out = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
           "max_feature_idx=%d" % (cols - 1), "objective=regression",
           "feature_names=" + " ".join("Column_%d" % i for i in range(cols)),
           "feature_infos=" + " ".join("[0:1]" for _ in range(cols)), ""]

    def child(c):  # a child's id: an inner node's index, or ~leaf for a leaf
        return str(c) if c < inner else str(~(c - inner))

    lefts = " ".join(child(2 * i + 1) for i in range(inner))
    rights = " ".join(child(2 * i + 2) for i in range(inner))
    for t in range(ntrees):
        out += ["Tree=%d" % t, "num_leaves=%d" % nleaves, "num_cat=0",
                "split_feature=" + " ".join(str(int(f)) for f in feat[t]),
                "split_gain=" + " ".join(["1"] * inner),
                "threshold=" + " ".join(num(v) for v in below[t]),
                "decision_type=" + " ".join(["0"] * inner),
                "left_child=" + lefts, "right_child=" + rights,
                "leaf_value=" + " ".join(num(v) for v in leaf[t]),
                "leaf_weight=" + " ".join(["1"] * nleaves), "leaf_count=" + " ".join(["1"] * nleaves),
                "internal_value=" + " ".join(["0"] * inner), "internal_weight=" + " ".join(["1"] * inner),
                "internal_count=" + " ".join(["1"] * inner), "is_linear=0", "shrinkage=1", "", ""]
    out += ["end of trees", "", "feature_importances:", "", "parameters:", "[boosting: gbdt]",
            "[objective: regression]", "end of parameters", "", "pandas_categorical:null", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def rel_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def time_xgb(path, X, reps, gpu):
    import xgboost as xgb
    bst = xgb.Booster(model_file=path)
    if not gpu:
        bst.set_param({"device": "cpu", "nthread": 16})
        t0 = time.perf_counter()
        p = bst.inplace_predict(X, predict_type="margin")
        return (time.perf_counter() - t0), np.asarray(p), "cpu"
    import cupy as cp
    bst.set_param({"device": "cuda"})
    Xg = cp.asarray(X)
    t0 = time.perf_counter()
    p = bst.inplace_predict(Xg, predict_type="margin")  # warm-up: the model goes to the GPU
    cp.cuda.runtime.deviceSynchronize()
    if time.perf_counter() - t0 > 2.0:
        reps = min(reps, 3)  # a slow model: three runs say as much within the call's time
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        p = bst.inplace_predict(Xg, predict_type="margin")
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    out = cp.asnumpy(p)
    del Xg, p
    cp.get_default_memory_pool().free_all_blocks()
    return float(np.median(times)), out, "cuda (%d runs, %.3f .. %.3f ms)" % (reps, min(times) * 1e3, max(times) * 1e3)


def time_lgb(path, X, sub):
    import lightgbm as lgb
    bst = lgb.Booster(model_file=path)
    Xs = X[:sub]
    bst.predict(Xs[:1000], raw_score=True, num_threads=16)  # warm-up
    times, p = [], None
    for _ in range(3):
        t0 = time.perf_counter()
        p = bst.predict(Xs, raw_score=True, num_threads=16)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--cols", type=int, default=136)
    ap.add_argument("--trees", default="1000,10000")
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clsearch", default="build/clsearch")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variants", default="", help="clsearch bench trees --variants (default: its own)")
    ap.add_argument("--variants-large", default="", help="the same for models of 5,000 trees or more")
    ap.add_argument("--lgb-evals", type=float, default=1e8, help="LightGBM's subset: rows x trees at most")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--model-only", action="store_true")
    ap.add_argument("--first-feature", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.model_only:
        rng = np.random.default_rng(a.seed)
        qs = np.tile(np.linspace(0.01, 0.99, 99, dtype=np.float32)[:, None], (1, a.cols))
        for ntrees in [int(x) for x in a.trees.split(",")]:
            feat, thr, leaf = make_ensemble(rng, ntrees, a.depth, qs[:, a.first_feature:])
            feat = feat + a.first_feature
            write_xgb(os.path.join(a.out, "xgb-%d.json" % ntrees), feat, thr, leaf, a.cols)
            write_lgb(os.path.join(a.out, "lgb-%d.txt" % ntrees), feat, thr, leaf, a.cols)
            log("%d trees of depth %d over features %d .. %d: %s" % (ntrees, a.depth, a.first_feature, a.cols - 1, a.out))
        return 0
    import xgboost
    vers = "numpy %s, xgboost %s" % (np.__version__, xgboost.__version__)
    try:  # LightGBM needs scipy; without it the rest still runs, and the table says so
        import lightgbm
        vers += ", lightgbm %s" % lightgbm.__version__
        have_lgb = True
    except ImportError as e:
        log("LightGBM unavailable (%s): its rows are left out" % e)
        have_lgb = False
    if not a.no_gpu:
        import cupy
        vers += ", cupy %s" % cupy.__version__
    log("versions:", vers)

    rng = np.random.default_rng(a.seed)
    t0 = time.perf_counter()
    X = rng.random((a.rows, a.cols), dtype=np.float32)
    rows_path = os.path.join(a.out, "rows.f32")
    X.tofile(rows_path)
    qs = np.quantile(X[: min(a.rows, 100_000)], np.linspace(0.01, 0.99, 99), axis=0).astype(np.float32)
    log("matrix %d x %d float32 written in %.1f s" % (a.rows, a.cols, time.perf_counter() - t0))

    table = []
    ok = True
    for ntrees in [int(x) for x in a.trees.split(",")]:
        feat, thr, leaf = make_ensemble(rng, ntrees, a.depth, qs)
        xgb_path = os.path.join(a.out, "xgb-%d.json" % ntrees)
        lgb_path = os.path.join(a.out, "lgb-%d.txt" % ntrees)
        write_xgb(xgb_path, feat, thr, leaf, a.cols)
        write_lgb(lgb_path, feat, thr, leaf, a.cols)
        log("\n== %d trees of depth %d (%d leaves): %s, %s" % (ntrees, a.depth, 1 << a.depth, xgb_path, lgb_path))

        xs, xp, how = time_xgb(xgb_path, X, a.reps, not a.no_gpu)
        log("XGBoost inplace_predict %s: %.3f ms median, %.1f M docs/s" % (how, xs * 1e3, a.rows / xs / 1e6))
        sub = int(max(1000, min(a.rows, a.lgb_evals / ntrees)))
        if have_lgb:
            ls, lp = time_lgb(lgb_path, X, sub)
            log("LightGBM predict (16 threads) on %d rows: %.3f s median, %.2f M docs/s" % (sub, ls, sub / ls / 1e6))
            log("XGBoost against LightGBM on those rows: max rel diff %.3g" % rel_diff(xp[:sub], lp))

        scores_path = os.path.join(a.out, "clsearch-%d.f32" % ntrees)
        variants = a.variants_large if ntrees >= 5000 and a.variants_large else a.variants
        cmd = [a.clsearch, "bench", "trees", "-m", xgb_path, "--rows", rows_path, "--cols", str(a.cols),
               "-d", a.device, "-r", str(a.reps), "--scores", scores_path,
               "--check", "10000" if ntrees < 5000 else "2000"]
        if variants:
            cmd += ["--variants", variants]
        log("$ " + " ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            log("clsearch bench trees failed (exit %d)" % r.returncode)
            ok = False
            continue
        results = [dict(kv.split("=", 1) for kv in re.findall(r"(\w+=\S+)", line))
                   for line in r.stdout.splitlines() if line.startswith("RESULT ")]
        cs = np.fromfile(scores_path, dtype=np.float32)
        d_x = rel_diff(cs, xp)
        d_l = rel_diff(cs[:sub], lp) if have_lgb else 0.0
        good = d_x <= 1e-5 and d_l <= 1e-5 and all(res["exact"] == "1" for res in results)
        ok &= good
        log("clsearch against XGBoost (all %d rows): max rel diff %.3g; against LightGBM (%d rows): %.3g; %s"
            % (a.rows, d_x, sub, d_l, "within 1e-5" if good else "FAILED"))
        # the clsearch LightGBM file scores the same (one variant, checked bit for bit inside)
        xdps = a.rows / xs
        table.append((ntrees, "XGBoost inplace_predict (%s)" % ("GPU" if not a.no_gpu else "CPU"), xdps, 1.0))
        if have_lgb:
            table.append((ntrees, "LightGBM predict, 16 threads", sub / ls, sub / ls / xdps))
        best = max(results, key=lambda res: float(res["docs_per_s"])) if results else None
        for res in results:
            label = "clsearch L%s WG%s D%s R%s T%s%s" % (res["layout"], res["wg"], res["docs"], res["local"], res["tile"],
                                                   " (best)" if res is best else "")
            table.append((ntrees, label, float(res["docs_per_s"]), float(res["docs_per_s"]) / xdps))

    log("\n%-7s %-44s %14s %12s" % ("trees", "engine", "docs/s", "vs XGB-GPU"))
    for t, e, d, r in table:
        log("%-7d %-44s %14.4g %11.2fx" % (t, e, d, r))
    log("L: 0 node walk, 1 level-order; WG: work-items; D: documents a work-item; R: 1 rows in local memory; "
        "T: trees a tile in local memory (the kernel line above says what fit)")
    log("check: %s" % ("all scores within 1e-5 of both libraries, every clsearch variant equal to the C twin"
                       if ok else "FAILED (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
