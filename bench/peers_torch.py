#!/usr/bin/env python3
"""PyTorch's equivalents of clsearch's kernels, on the same GPU, for same-run ratios.

    python3 bench/peers_torch.py [--json FILE] [--repeats N]

Measures, with CUDA events after a warm-up, medians over the repeats:
  * torch.cumsum over 2^28 int32 (the scan kernels' peer), elements/s;
  * torch.topk k=10 over 1024 rows of 100,000 float32 and over one row of 25,000,000 (the
    shapes `clsearch bench topk` runs by default), elements/s;
  * torch.topk k=1000 over 1024 rows of 100,000.
Inputs are uniform random floats (ints for cumsum) made on the device. Exits 0 with a
"SKIP" line when PyTorch or a CUDA device is absent.
"""
import argparse
import json
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
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

    cases = [("cumsum", (1 << 28,), None), ("topk", (1024, 100000), 10), ("topk", (1, 25000000), 10),
             ("topk", (1024, 100000), 1000)]
    for op, shape, k in cases:
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
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
