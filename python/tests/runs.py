"""What the Python tests share: `clsearch search`'s run file read back, and a comparison of hit
lists that names the first difference (assertEqual's diff of thousands of rows takes minutes)."""

import os
import subprocess

BIN = os.environ.get("CLSEARCH_BIN", "clsearch")


def command_run(index, topics, device, out, mode="or", k=1000):
    """`clsearch search`'s run as (qid, docno, rank, score as printed) rows."""
    subprocess.run([BIN, "search", "-x", index, "-q", topics, "-d", device, "-m", mode, "-k", str(k), "-o", out],
                   check=True, capture_output=True)
    with open(out) as f:
        return [(q, d, int(r), s) for q, _, d, r, s, _ in (line.split() for line in f)]


def as_run(hits):
    """Python hits as the run file writes them: ranks from 1, scores with six decimals."""
    return [(h.qid, h.docno, h.rank + 1, "%.6f" % h.score) for h in hits]


def assert_same(test, got, want, what):
    """got == want, or a failure naming the first hit that differs."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            test.fail("%s: hit %d differs: %r, expected %r" % (what, i, g, w))
    if len(got) != len(want):
        test.fail("%s: %d hits, expected %d" % (what, len(got), len(want)))
    test.assertTrue(want, what + ": no hits to compare")
