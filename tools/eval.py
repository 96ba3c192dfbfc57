#!/usr/bin/env python3
"""trec_eval-compatible evaluation of a TREC run, through pytrec_eval.

    eval.py QRELS RUN [-m map -m ndcg_cut_10 -m P_30 ...] [--per-query] [-c] [-l LEVEL]
            [--min-map X] [--max-map Y]

Run it with the interpreter that tools/pyenv.sh prints (a venv with pytrec-eval-terrier).

Inputs (whitespace-separated, blank lines ignored, anything else malformed):
  QRELS  qid iter docno rel          (iter ignored; rel an integer, >= LEVEL means relevant);
         --qrels-format reads Cranfield's and CISI's own layouts instead (see its help)
  RUN    qid Q0 docno rank score tag (rank ignored)

Semantics follow trec_eval, whose C code pytrec_eval wraps:
  * Each query's documents are ranked by score descending, ties broken by docno in descending
    string order (trec_eval's rule, applied inside pytrec_eval); the rank column is ignored.
  * Queries in the run but not in the qrels are ignored.
  * By default the summary ("all") averages over the queries present in BOTH the qrels and the
    run, as trec_eval does without -c: a query the run misses is simply left out. With -c (as in
    trec_eval -c) every qrels query counts and a missing one scores 0 (evaluated, like trec_eval
    does, as a ranking of one unknown document with num_ret reset to 0).
  * Queries judged only non-relevant count, scoring 0 (trec_eval does the same).
  * Aggregation per measure as trec_eval: num_* summed, gm_* geometric mean, others the mean.
  * A run and qrels with no query in common is an error, as in trec_eval.
  * Duplicate (qid, docno) pairs in either file are errors (trec_eval refuses them too).

Measures: any trec_eval name pytrec_eval supports, with parameters as "P.30" or "P_30"; a bare
parameterised name ("P", "ndcg_cut") gives all its default cut-offs; nicknames ("official",
"all_trec") expand. Default: map, ndcg_cut_10, P_30, recall_1000.

Output: "measure<TAB>all<TAB>value" lines (4 decimals; integers for num_* counts) in the order the
measures were requested, like trec_eval -m but without its column padding. --per-query adds
"measure<TAB>qid<TAB>value" lines first, per query in trec_eval's (string) qid order.

Exit status: 0 success; 1 MAP outside [--min-map, --max-map]; 2 usage error, unreadable or
malformed input, unknown measure, or pytrec_eval missing.
"""

import argparse
import math
import re
import sys

DEFAULT_MEASURES = ["map", "ndcg_cut_10", "P_30", "recall_1000"]
BOGUS_DOCNO = "ceci_nest_pas_un_docno"  # trec_eval's stand-in for a missing query's ranking


class InputError(Exception):
    """A malformed or unreadable input file (exit status 2)."""


def fail(msg, status=2):
    print(f"eval.py: {msg}", file=sys.stderr)
    sys.exit(status)


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


QRELS_FORMATS = {
    # name: (fields, expected layout, function from the fields to (qid, docno, rel string))
    "trec": (4, "qid iter docno rel", lambda f: (f[0], f[2], f[3])),
    # Cranfield's cranqrel: grade 1 (complete answer) .. 4 (minimum interest), -1 (of no
    # interest); as gains 4 .. 1 and 0, so binary measures count grades 1-4 as relevant.
    "cranfield": (3, "qid docno grade", lambda f: (f[0], f[1], str(5 - int(f[2])) if f[2] != "-1" else "0")),
    # CISI.REL: 'qid docno 0 0.000000', every listed pair relevant.
    "cisi": (4, "qid docno 0 0.0", lambda f: (f[0], f[1], "1")),
}


def parse_qrels(path, fmt="trec"):
    """{qid: {docno: rel}}"""
    nfields, layout, pick = QRELS_FORMATS[fmt]
    qrels = {}
    for n, line in enumerate(read_lines(path), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != nfields:
            raise InputError(f"{path}:{n}: expected '{layout}', got {len(f)} fields: {line!r}")
        try:
            qid, docno, rel = pick(f)
        except ValueError:
            raise InputError(f"{path}:{n}: grade {f[2]!r} is not an integer") from None
        try:
            rel = int(rel)
        except ValueError:
            raise InputError(f"{path}:{n}: relevance {rel!r} is not an integer") from None
        docs = qrels.setdefault(qid, {})
        if docno in docs:
            raise InputError(f"{path}:{n}: duplicate judgment for query {qid} document {docno}")
        docs[docno] = rel
    if not qrels:
        raise InputError(f"{path}: no judgments")
    return qrels


def parse_run(path):
    """({qid: {docno: score}}, the first line's tag)"""
    run, tag = {}, ""
    for n, line in enumerate(read_lines(path), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 6:
            raise InputError(
                f"{path}:{n}: expected 'qid Q0 docno rank score tag', got {len(f)} fields: {line!r}")
        qid, _, docno, _, score, line_tag = f
        tag = tag or line_tag
        try:
            score = float(score)
        except ValueError:
            raise InputError(f"{path}:{n}: score {score!r} is not a number") from None
        if math.isnan(score):
            raise InputError(f"{path}:{n}: score is NaN")
        docs = run.setdefault(qid, {})
        if docno in docs:
            raise InputError(f"{path}:{n}: duplicate document {docno} for query {qid}")
        docs[docno] = score
    return run, tag


def split_measure(name, pte):
    """('P', ['30']) for "P_30" / "P.30"; ('map', None) for "map"; None if unknown."""
    if name in pte.supported_measures:
        return name, None
    for base in sorted(pte.supported_measures, key=len, reverse=True):  # longest: ndcg_cut before ndcg
        m = re.fullmatch(re.escape(base) + r"[._]([0-9]+(?:\.[0-9]+)?(?:,[0-9]+(?:\.[0-9]+)?)*)", name)
        if m:
            return base, m.group(1).split(",")
    return None


def result_keys(base, params, keys):
    """The keys of one query's result that belong to (base, params), in cut-off order."""
    found = []
    for k in keys:
        if k == base and params is None:
            found.append((-1.0, k))
        elif k.startswith(base + "_"):
            rest = k[len(base) + 1:]
            if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", rest) and (
                    params is None or any(float(rest) == float(p) for p in params)):
                found.append((float(rest), k))
    return [k for _, k in sorted(found)]


def aggregate(pte, key, values):
    if not values:
        return 0.0
    return pte.compute_aggregated_measure(key, values)


def fmt(key, value, tag):
    if key == "runid":  # trec_eval prints the run's tag, not a number
        return tag
    if key.startswith("num_"):
        return str(int(round(value)))
    return f"{value:.4f}"


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="trec_eval-compatible evaluation through pytrec_eval (see the module docstring).")
    ap.add_argument("qrels")
    ap.add_argument("run")
    ap.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                    help="a trec_eval measure (repeatable); default: " + ", ".join(DEFAULT_MEASURES))
    ap.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    ap.add_argument("-c", "--complete", action="store_true",
                    help="average over all qrels queries, missing ones scoring 0 (trec_eval -c)")
    ap.add_argument("-l", "--level", type=int, default=1,
                    help="minimum relevance value counted as relevant (trec_eval -l; default 1)")
    ap.add_argument("--qrels-format", choices=sorted(QRELS_FORMATS), default="trec",
                    help="trec (default); cranfield: 'qid docno grade', grades 1-4 as gains 4-1, "
                         "-1 as 0; cisi: 'qid docno 0 0.0', all relevant")
    ap.add_argument("--min-map", type=float, help="exit 1 if MAP is below this")
    ap.add_argument("--max-map", type=float, help="exit 1 if MAP is above this")
    args = ap.parse_args(argv)  # usage errors exit 2

    try:
        import pytrec_eval as pte
    except ImportError:
        fail("pytrec_eval is not importable by " + sys.executable +
             "; run tools/pyenv.sh and use the python it prints")

    requested = args.measures or DEFAULT_MEASURES
    # relstring is a per-query string in trec_eval that pytrec_eval cannot return: left out.
    supported = sorted(set(pte.supported_measures) - {"relstring"})
    wanted = []  # (base, params) per printed measure group, in request order
    for name in requested:
        if name in pte.supported_nicknames:
            wanted.extend((m, None) for m in sorted(pte.supported_nicknames[name]) if m in supported)
            continue
        sp = split_measure(name, pte)
        if sp is None or sp[0] not in supported:
            fail(f"unknown measure {name!r}; supported: " + " ".join(supported))
        wanted.append(sp)
    check_map = args.min_map is not None or args.max_map is not None
    eval_set = {b if p is None else f"{b}.{','.join(p)}" for b, p in wanted}
    if check_map:
        eval_set.add("map")

    try:
        qrels = parse_qrels(args.qrels, args.qrels_format)
        run, tag = parse_run(args.run)
    except InputError as e:
        fail(str(e))

    try:
        evaluator = pte.RelevanceEvaluator(qrels, eval_set, relevance_level=args.level)
    except ValueError as e:
        fail(str(e))

    common = {q: run[q] for q in run if q in qrels}
    per_query = evaluator.evaluate(common) if common else {}
    if args.complete:
        missing = {q: {BOGUS_DOCNO: 1.0} for q in qrels if q not in per_query}
        if missing:
            for q, res in evaluator.evaluate(missing).items():
                if "num_ret" in res:
                    res["num_ret"] = 0.0
                per_query[q] = res
    if not per_query:
        fail(f"no queries with both results and relevance info ({args.run} vs {args.qrels})")

    qids = sorted(per_query)  # trec_eval sorts query ids as strings
    any_keys = per_query[qids[0]].keys()
    groups = []
    for base, params in wanted:
        keys = result_keys(base, params, any_keys)
        for k in keys:
            if k not in groups:
                groups.append(k)
    out = []
    if args.per_query:
        for q in qids:
            for k in groups:
                out.append(f"{k}\t{q}\t{fmt(k, per_query[q][k], tag)}")
    summary = {k: aggregate(pte, k, [per_query[q][k] for q in qids]) for k in groups}
    for k in groups:
        out.append(f"{k}\tall\t{fmt(k, summary[k], tag)}")
    print("\n".join(out))

    if check_map:
        value = aggregate(pte, "map", [per_query[q]["map"] for q in qids])
        if args.min_map is not None and value < args.min_map:
            fail(f"MAP {value:.4f} is below --min-map {args.min_map}", 1)
        if args.max_map is not None and value > args.max_map:
            fail(f"MAP {value:.4f} is above --max-map {args.max_map}", 1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into head: not an error of ours
        sys.stderr.close()
        sys.exit(0)
