#!/usr/bin/env python3
"""PyTorch's equivalents of clsearch's kernels, on the same GPU, for same-run ratios.

    python3 bench/peers_torch.py [--json FILE] [--repeats N] [--ops cumsum,topk,intersect]
                                 [--topk ROWSxN:K,...] [--short 1000,10000] [--ratios 1,10,100,1000]
                                 [--batch 1,64,1024,16384] [--share 0.5] [--mib 256]

Measures, with CUDA events after a warm-up, medians over the repeats:
  * torch.cumsum over 2^28 int32 (the scan kernels' peer), elements/s;
  * torch.topk along the rows of float32 matrices, elements/s, one line a case of --topk, given
    as `clsearch bench topk -c` takes them (ROWSxN:K); the default is every shape that suite runs
    by default and bench/all.sh adds at the gpu scale: 1024x100000 at k 10, 1000 and 1,
    1x25000000:10, 16384x1000:10 and 1x1000000:10000 (bench/all.sh passes the cases it gives
    the suite);
  * batched 2-term AND intersection (the intersect_and kernel's peer), the inputs `clsearch bench
    intersect` makes, for the same --short, --ratios, --batch, --share and --mib: per query a
    long list of SHORT x RATIO sorted docIDs (gaps uniform in 2..6) and a short list of SHORT,
    one long-list position per RATIO-wide stride, that docID (exactly SHARE of them) or that
    docID + 1 (never in the long list). Timed: torch.searchsorted of each short list into its
    long list, then gather and compare (and the per-query count); postings/s counts both lists,
    BATCH x (SHORT + LONG), as the suite does; the counts are checked. Configurations whose
    tensors would pass --mib MiB are skipped (the suite counts its own buffers against --mib,
    so the two may skip different configurations at the edge).
Inputs are uniform random floats (ints for cumsum) made on the device. Exits 0 with a
"SKIP" line when PyTorch or a CUDA device is absent.
"""
import argparse
import json
import os
import statistics
import sys
import time


def sizes(text):
    """A comma list of whole numbers, 1000 or 1e3, as the clsearch suites take them."""
    try:
        v = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text}")
    if any(x < 1 or x != int(x) for x in v):
        raise argparse.ArgumentTypeError(f"not a list of whole numbers >= 1: {text}")
    return [int(x) for x in v]


# every shape `clsearch bench topk` times by default, and the k 1 case bench/all.sh adds (gpu)
TOPK_CASES = "1024x100000:10,1x25000000:10,1024x100000:1000,16384x1000:10,1x1000000:10000,1024x100000:1"


def topk_cases(text):
    """ROWSxN:K,... as `clsearch bench topk -c` takes them: [(rows, n, k), ...] with 1 <= k <= n."""
    out = []
    for c in text.split(","):
        try:
            shape, k = c.split(":")
            rows, n = shape.split("x")
            case = (int(rows), int(n), int(k))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a ROWSxN:K case: {c}")
        if min(case) < 1 or case[2] > case[1]:
            raise argparse.ArgumentTypeError(f"{c}: ROWS, N and K at least 1, K at most N (torch.topk)")
        out.append(case)
    return out


def intersect_inputs(torch, dev, g, batch, short, ratio, share):
    """One batch of the intersect suite's inputs: long [batch, short x ratio] and short [batch,
    short] int32, sorted; returns them and the hits per query."""
    lng = short * ratio
    gaps = torch.randint(2, 7, (batch, lng), dtype=torch.int32, device=dev, generator=g)
    gaps[:, 0] = torch.randint(0, 4, (batch,), dtype=torch.int32, device=dev, generator=g)
    longs = torch.cumsum(gaps, 1, dtype=torch.int32)
    del gaps
    pos = (torch.arange(short, device=dev) * ratio).expand(batch, short) + \
        torch.randint(0, ratio, (batch, short), device=dev, generator=g)
    hits = int(share * short + 0.5)
    chosen = torch.rand((batch, short), device=dev, generator=g).argsort(1)[:, :hits]
    miss = torch.ones((batch, short), dtype=torch.int32, device=dev)
    miss.scatter_(1, chosen, 0)
    shorts = longs.gather(1, pos) + miss
    return longs, shorts, hits


def intersect_op(torch, longs, shorts):
    """Which short-list docIDs the long list holds, and how many a query: searchsorted, then
    gather and compare."""
    idx = torch.searchsorted(longs, shorts).clamp_(max=longs.shape[1] - 1)
    found = longs.gather(1, idx) == shorts
    return found, found.sum(1)


def intersect_cases(torch, dev, name, a, timed, out):
    print(f"{'op':<10} {'shape BxS:L':<22} {'ratio':>6} {'med ms':>10} {'min ms':>10} {'Gelem/s':>10} "
          f"{'queries/s':>12} {'check':>6}")
    for batch in a.batch:
        for short in a.short:
            for ratio in a.ratios:
                lng = short * ratio
                shp = f"{batch}x{short}:{lng}"
                # tensors alive while timing: both lists (int32), positions, indexes (int64), flags
                need = 4 * batch * (short + lng) + 8 * batch * short * 3
                if need > a.mib << 20 or lng > 1 << 28:
                    print(f"# skip intersect {shp}: {need / 2**20:.0f} MiB over --mib {a.mib}")
                    continue
                g = torch.Generator(device=dev)
                g.manual_seed(42)
                longs, shorts, hits = intersect_inputs(torch, dev, g, batch, short, ratio, a.share)
                med, mn = timed(lambda: intersect_op(torch, longs, shorts))
                ok = bool((intersect_op(torch, longs, shorts)[1] == hits).all())
                rate = batch * (short + lng) / med / 1e9
                qps = batch / med
                print(f"{'intersect':<10} {shp:<22} {ratio:>6} {med * 1e3:10.3f} {mn * 1e3:10.3f} {rate:10.2f} "
                      f"{qps:12.0f} {'ok' if ok else 'WRONG':>6}")
                if out:
                    out.write(json.dumps({"suite": "peers", "peer": "torch", "torch": torch.__version__,
                                          "device": name, "commit": os.environ.get("CLSEARCH_COMMIT", "unknown"),
                                          "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                                          "op": "intersect", "shape": shp, "batch": batch, "short": short,
                                          "long": lng, "ratio": ratio, "share": a.share, "median_s": med,
                                          "min_s": mn, "gelements_per_s": rate, "queries_per_s": qps,
                                          "check": "ok" if ok else "wrong"}) + "\n")
                del longs, shorts
                if not ok:
                    return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--ops", default="cumsum,topk,intersect", help="which peers: cumsum, topk, intersect")
    ap.add_argument("--topk", type=topk_cases, default=topk_cases(TOPK_CASES), metavar="ROWSxN:K,...",
                    help=f"torch.topk cases (default {TOPK_CASES})")
    ap.add_argument("--short", type=sizes, default=[1000, 10000])
    ap.add_argument("--ratios", type=sizes, default=[1, 10, 100, 1000])
    ap.add_argument("--batch", type=sizes, default=[1, 64, 1024, 16384])
    ap.add_argument("--share", type=float, default=0.5)
    ap.add_argument("--mib", type=int, default=256)
    a = ap.parse_args()
    ops = set(a.ops.split(","))
    if not ops <= {"cumsum", "topk", "intersect"} or not 0 <= a.share <= 1 or a.mib < 1 or a.repeats < 1:
        ap.error("--ops takes cumsum, topk, intersect; --share 0..1; --mib and --repeats at least 1")
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not importable by " + sys.executable)
        return 0
    if not torch.cuda.is_available():
        print("SKIP: PyTorch sees no CUDA device")
        return 0
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    out = open(a.json, "a") if a.json else None
    print(f"torch {torch.__version__} on {name}; {a.repeats} repeats after a warm-up (CUDA events)")
    if ops & {"cumsum", "topk"}:
        print(f"{'op':<10} {'shape':<22} {'k':>6} {'med ms':>10} {'min ms':>10} {'Gelem/s':>10}")

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(a.repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        return statistics.median(ts), min(ts)

    cases = [("cumsum", (1 << 28,), None)] + [("topk", (rows, n), k) for rows, n, k in a.topk]
    for op, shape, k in [c for c in cases if c[0] in ops]:
        g = torch.Generator(device=dev)
        g.manual_seed(42)
        if op == "cumsum":
            x = torch.randint(0, 16, shape, dtype=torch.int32, device=dev, generator=g)
            med, mn = timed(lambda: torch.cumsum(x, 0, dtype=torch.int32))
        else:
            x = torch.rand(shape, dtype=torch.float32, device=dev, generator=g)
            med, mn = timed(lambda: torch.topk(x, k, dim=-1))
        n = 1
        for d in shape:
            n *= d
        rate = n / med / 1e9
        shp = "x".join(str(d) for d in shape)
        print(f"{op:<10} {shp:<22} {k if k else '-':>6} {med * 1e3:10.3f} {mn * 1e3:10.3f} {rate:10.2f}")
        if out:
            out.write(json.dumps({"suite": "peers", "peer": "torch", "torch": torch.__version__, "device": name,
                                  "commit": os.environ.get("CLSEARCH_COMMIT", "unknown"),
                                  "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "op": op, "shape": shp,
                                  "k": k, "median_s": med, "min_s": mn, "gelements_per_s": rate}) + "\n")
    rc = intersect_cases(torch, dev, name, a, timed, out) if "intersect" in ops else 0
    if out:
        out.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
