#!/usr/bin/env python3
"""The tables of docs/PERFORMANCE.md, from the JSON lines one `bench/all.sh` run leaves in OUT.

    python3 bench/tables.py OUT [--device NAME]

Prints Markdown: the copy ceiling, the scan variants against torch.cumsum, decode per codec,
block size and variant (whole lists and scattered blocks), intersect and top-k against their
PyTorch peers (ratios of medians taken in the same run), score, and the end-to-end rows. Only
what the run measured is printed; --device keeps one device's rows (a substring of its name).
"""
import argparse
import glob
import json
import os
import sys


def load(out, suite):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if r.get("suite") == suite:
                    rows.append(r)
    return rows


def keep(rows, device):
    return [r for r in rows if not device or device in str(r.get("device", ""))]


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print()


def torch_ops(out):
    return {(r["op"], r["shape"], r.get("k")): r for r in load(out, "peers")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--device", default="")
    a = ap.parse_args()
    dev = a.device
    torch = torch_ops(a.out)

    copy = [r for r in keep(load(a.out, "copy"), dev) if r.get("ceiling")]
    if copy:
        print("**Copy ceiling** (`clsearch bench copy`): bytes read + written by a plain copy kernel.\n")
        table(["device", "variant", "GB/s median", "min", "max", "driver copy GB/s"],
              [[r["device"], r["variant"], f'{r["gbytes_per_s_median"]:.1f}', f'{r["gbytes_per_s_min"]:.1f}',
                f'{r["gbytes_per_s_max"]:.1f}', f'{r["driver_copy_gbytes_per_s_median"]:.1f}'] for r in copy])

    scan = keep(load(a.out, "scan"), dev)
    if scan:
        print("**Scan** (`clsearch bench scan`): 16 bytes per element (two passes), against the copy ceiling;"
              " torch.cumsum on the same device in the same run.\n")
        cs = torch.get(("cumsum", "268435456", None))
        rows = []
        for r in scan:
            ratio = f'{r["gelements_per_s"] / cs["gelements_per_s"]:.2f}x' if cs and r["n"] == 1 << 28 else ""
            rows.append([r["variant"], r["wg"], r["items"], f'2^{r["n"].bit_length() - 1}',
                         f'{r["median_s"] * 1e3:.3f}', f'{r["gelements_per_s"]:.1f}', f'{r["gbytes_per_s"]:.0f}',
                         f'{100 * r["gbytes_per_s"] / r["ceiling_gbytes_per_s"]:.1f}%', ratio, r["check"]])
        if cs:
            rows.append(["torch.cumsum", "", "", "2^28", f'{cs["median_s"] * 1e3:.3f}',
                         f'{cs["gelements_per_s"]:.1f}', "", "", "1.00x", ""])
        table(["variant", "WG", "items", "n", "median ms", "G elem/s", "GB/s", "of ceiling", "vs torch", "check"], rows)

    dec = load(a.out, "decode")
    if dec:
        print("**Decode** (`clsearch bench decode`): G postings/s and achieved GB/s (compressed words + 40 B a"
              " block read, 8 B a posting written) against the copy ceiling; select 1 = whole lists, 0.05 ="
              " a scattered 5% of the blocks. ref = the plain-C decoder on one core.\n")
        rows = []
        for r in dec:
            if dev and r["engine"] != "ref" and dev not in r["device"]:
                continue
            ceil = r["ceiling_gbytes_per_s"]
            rows.append([f'{r["codec"]}/{r["block"]}', r["select"], f'{r["bits_per_posting"]:.2f}',
                         "ref" if r["engine"] == "ref" else r["variant"], f'{r["median_s"] * 1e3:.3f}',
                         f'{r["gpostings_per_s"]:.2f}', f'{r["gbytes_per_s"]:.0f}' if r["engine"] != "ref" else "",
                         f'{100 * r["gbytes_per_s"] / ceil:.1f}%' if r["engine"] != "ref" else "", r["check"]])
        table(["codec/block", "select", "bits/posting", "engine / scan variant", "median ms", "G postings/s", "GB/s",
               "of ceiling", "check"], rows)

    inter = keep(load(a.out, "intersect"), dev)
    if inter:
        print("**Intersect** (`clsearch bench intersect`): 2-term AND, the best work-group size per shape;"
              " torch.searchsorted + gather + compare on identical inputs in the same run.\n")
        best = {}
        for r in inter:
            key = (r["batch"], r["short"], r["ratio"])
            if key not in best or r["median_s"] < best[key]["median_s"]:
                best[key] = r
        rows = []
        for key in sorted(best):
            r = best[key]
            t = torch.get(("intersect", f'{r["batch"]}x{r["short"]}:{r["long"]}', None))
            rows.append([r["batch"], r["short"], r["ratio"], r["wg"], f'{r["median_s"] * 1e3:.3f}',
                         f'{r["queries_per_s"]:.3g}', f'{r["postings_per_s"] * 1e-9:.1f}',
                         f'{t["median_s"] * 1e3:.3f}' if t else "", f'{t["median_s"] / r["median_s"]:.2f}x' if t else "",
                         r["check"]])
        table(["batch", "short", "ratio", "best WG", "median ms", "queries/s", "G postings/s", "torch ms",
               "speed-up vs torch", "check"], rows)

    score = keep(load(a.out, "score"), dev)
    if score:
        print("**Score** (`clsearch bench score`), the best work-group size per shape. and: candidates x"
              " (12 + 8 x terms) bytes; or: 4 B a row element + 20 B a posting.\n")
        best = {}
        for r in score:
            key = (r["mode"], r["batch"], r["count"])
            if key not in best or r["median_s"] < best[key]["median_s"]:
                best[key] = r
        table(["mode", "batch", "items", "best WG", "median ms", "G items/s", "GB/s", "of ceiling", "check"],
              [[r["mode"], r["batch"], r["count"], r["wg"], f'{r["median_s"] * 1e3:.3f}',
                f'{r["items_per_s"] * 1e-9:.2f}', f'{r["gbytes_per_s"]:.0f}', f'{100 * r["ceiling_fraction"]:.1f}%',
                r["check"]] for _, r in sorted(best.items())])

    topk = keep(load(a.out, "topk"), dev)
    if topk:
        print("**Top-k** (`clsearch bench topk`): dense rows of random scores; torch.topk on the same shapes.\n")
        rows = []
        for r in topk:
            t = torch.get(("topk", f'{r["rows"]}x{r["n"]}', r["k"]))
            rows.append([f'{r["rows"]} x {r["n"]}', r["k"], f'{r["median_s"] * 1e3:.3f}',
                         f'{r["gelements_per_s"]:.2f}', f'{t["gelements_per_s"]:.2f}' if t else "",
                         f'{r["gelements_per_s"] / t["gelements_per_s"]:.2f}x' if t else "", r["check"]])
        table(["rows x N", "k", "median ms", "G elem/s", "torch G elem/s", "vs torch", "check"], rows)

    e2e = load(a.out, "e2e")
    if e2e:
        print("**End to end** (`clsearch bench e2e`): queries/s and per-query latency by batch size;"
              " transfers apart from kernels (medians per batch).\n")
        table(["engine", "mode", "k", "batch", "queries/s", "p50 ms", "p95 ms", "p99 ms", "H2D ms", "kernels ms",
               "D2H ms"],
              [[r["engine"], r["mode"], r["k"], r["batch"], f'{r["qps"]:,.0f}', f'{r["latency_p50_ms"]:.3f}',
                f'{r["latency_p95_ms"]:.3f}', f'{r["latency_p99_ms"]:.3f}', f'{r["h2d_ms"]:.3f}',
                f'{r["kernels_ms"]:.3f}', f'{r["d2h_ms"]:.3f}'] for r in e2e])
    return 0


if __name__ == "__main__":
    sys.exit(main())
