"""The Python bindings against the command: a generated collection, indexed and searched by
`clsearch`, then searched again through clsearch.Engine on the reference engine and on the
OpenCL CPU device (POCL); results must be the command's, hit for hit.

Run by tests/python.sh (CTest `python`), which sets CLSEARCH_BIN (the command),
CLSEARCH_LIBRARY (the library built beside it), CLS_TEST_TMP and PYTHONPATH.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import clsearch
import runs
from runs import as_run

TMP = None
IDX = TOPICS = None
QUERIES = []


def setUpModule():
    global TMP, IDX, TOPICS, QUERIES
    TMP = tempfile.mkdtemp(prefix="python-", dir=os.environ.get("CLS_TEST_TMP"))
    subprocess.run([runs.BIN, "generate", "-o", TMP + "/gen", "--docs", "3000", "--queries", "40", "--seed", "7"],
                   check=True, capture_output=True)
    IDX = TMP + "/gen.idx"
    subprocess.run([runs.BIN, "index", "-q", "-c", "jsonl", "-o", IDX, TMP + "/gen/corpus.jsonl"], check=True)
    TOPICS = TMP + "/gen/topics.tsv"
    QUERIES = clsearch.read_topics(TOPICS)


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def command_run(device, mode="or", k=1000):
    return runs.command_run(IDX, TOPICS, device, TMP + "/cmd.run", mode, k)


def cpu_device():
    """True when an OpenCL CPU device (POCL in CI) is there; else the test says it skips."""
    return any(not d["is_gpu"] for d in clsearch.devices())


class TestIndex(unittest.TestCase):
    def test_stats(self):
        with clsearch.Index(IDX) as idx:
            self.assertEqual(len(idx), 3000)
            self.assertEqual(idx.documents, 3000)
            st = idx.stats
            for key in ("terms", "postings", "tokens", "avg_doc_len", "codec", "block_size", "blocks",
                        "postings_bytes", "file_bytes"):
                self.assertIn(key, st)
            self.assertEqual(st["codec"], "bp")
            self.assertEqual(st["block_size"], 128)
            self.assertEqual(st["file_bytes"], os.path.getsize(IDX))
            self.assertEqual(idx.docno(0), "G00000000")
            self.assertEqual(idx.docno(2999), "G00002999")
            with self.assertRaises(IndexError):
                idx.docno(3000)
            with self.assertRaises(IndexError):
                idx.docno(-1)
            self.assertTrue(idx.analyzer["stem"])
            idx.check()
            self.assertIn("3000 documents", repr(idx))
        self.assertTrue(idx.closed)
        with self.assertRaisesRegex(ValueError, "closed"):
            idx.docno(0)
        idx.close()  # a second close does nothing

    def test_missing_index(self):
        with self.assertRaises(clsearch.Error) as cm:
            clsearch.Index(TMP + "/absent.idx")
        e = cm.exception
        self.assertEqual(e.code, "CLS_E_IO")
        self.assertEqual(e.call, "cls_index_open")
        self.assertIn("absent.idx", e.message)
        self.assertIn(e.message, str(e))

    def test_not_an_index(self):
        with self.assertRaises(clsearch.Error) as cm:
            clsearch.Index(TOPICS)
        self.assertIn(cm.exception.code, ("CLS_E_CORRUPT", "CLS_E_VERSION"))
        self.assertTrue(cm.exception.message)


class TestSearch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.idx = clsearch.Index(IDX)
        cls.ref = clsearch.Engine(cls.idx, device="ref")

    @classmethod
    def tearDownClass(cls):
        cls.idx.close()

    def test_ref_equals_command(self):
        for mode in clsearch.MODES:
            with self.subTest(mode=mode):
                hits = self.ref.search(QUERIES, k=100, mode=mode)
                runs.assert_same(self, as_run(hits), command_run("ref", mode, 100), "ref " + mode)

    def engine_equals_command_and_reference(self, eng, device):
        """eng's runs equal `clsearch search -d device` and the reference engine's, bit for bit."""
        for mode in clsearch.MODES:
            with self.subTest(device=device, mode=mode):
                hits = eng.search(QUERIES, k=100, mode=mode)
                runs.assert_same(self, as_run(hits), command_run(device, mode, 100), device + " " + mode)
                # the engines agree bit for bit, not only to six decimals
                runs.assert_same(self, hits, self.ref.search(QUERIES, k=100, mode=mode), device + "/ref " + mode)
        self.assertEqual(eng.counters()["queries"], len(QUERIES))

    def test_pocl_equals_command_and_reference(self):
        if not cpu_device():
            self.skipTest("SKIP: no OpenCL CPU device (POCL: pocl-opencl-icd)")
        with clsearch.Engine(self.idx, device="cpu") as eng:
            self.assertTrue(eng.describe().startswith("device: "))
            self.engine_equals_command_and_reference(eng, "cpu")
            steps, batches = eng.profile()
            self.assertGreaterEqual(batches, 1)
            self.assertIn("topk", [s.name for s in steps])

    def test_host_equals_command_and_reference(self):
        with clsearch.Engine(self.idx, device="host:2") as eng:
            self.assertTrue(eng.describe().startswith("device: host executor"))
            self.engine_equals_command_and_reference(eng, "host:2")
            # a deadline orders and counts; it never changes a result
            late = eng.search(QUERIES, k=100, deadline_ms=1e-6)
            self.assertEqual(eng.counters()["queries_late"], len(QUERIES))
            runs.assert_same(self, late, self.ref.search(QUERIES, k=100), "host:2 with a deadline")
            with self.assertRaises(clsearch.Error):
                eng.search(QUERIES[:1], deadline_ms=-1)

    def test_query_forms(self):
        texts = [t for _, t in QUERIES[:5]]
        numbered = self.ref.search(texts, k=10)
        self.assertEqual([h.qid for h in numbered if h.rank == 0], ["1", "2", "3", "4", "5"])
        pairs = self.ref.search(QUERIES[:5], k=10)
        self.assertEqual({h.qid for h in pairs}, {q for q, _ in QUERIES[:5]})
        self.assertEqual(self.ref.search(dict(QUERIES[:5]), k=10), pairs)
        self.assertEqual([h[1:] for h in numbered], [h[1:] for h in pairs])
        one = self.ref.search(texts[0], k=10)
        self.assertEqual([h.qid for h in one], ["1"] * len(one))
        self.assertEqual([h.rank for h in one], list(range(len(one))))
        self.assertEqual(self.ref.search([]), [])
        # the engine's batch and results are reused: the same call twice gives the same hits
        self.assertEqual(self.ref.search(QUERIES[:5], k=10), pairs)

    def test_unknown_terms_match_nothing(self):
        self.assertEqual(self.ref.search([("x", "zzzzqqqq")], k=10), [])

    def test_bm25_parameters(self):
        q = QUERIES[:3]
        default = self.ref.search(q, k=20)
        self.assertEqual(default, self.ref.search(q, k=20, k1=0.9, b=0.4))
        other = self.ref.search(q, k=20, k1=1.2, b=0.75)
        self.assertNotEqual([h.score for h in default], [h.score for h in other])

    def test_frame(self):
        try:
            import pandas as pd
        except ImportError:
            self.skipTest("SKIP: pandas is absent (Debian: python3-pandas)")
        topics = pd.DataFrame(QUERIES[:5], columns=["qid", "query"])
        df = self.ref.search(topics, k=10)
        self.assertIsInstance(df, pd.DataFrame)
        self.assertEqual(list(df.columns), ["qid", "docid", "docno", "rank", "score", "query"])
        hits = self.ref.search(QUERIES[:5], k=10)
        self.assertEqual(list(df.itertuples(index=False, name=None)),
                         [(h.qid, h.docid, h.docno, h.rank, h.score, dict(QUERIES)[h.qid]) for h in hits])
        plain = self.ref.search(QUERIES[:5], k=10, as_frame=True)
        self.assertEqual(list(plain.columns), ["qid", "docid", "docno", "rank", "score"])
        self.assertEqual(len(plain), len(hits))
        self.assertIsInstance(self.ref.search(topics, k=10, as_frame=False), list)
        with self.assertRaisesRegex(ValueError, "qid and query"):
            self.ref.search(pd.DataFrame({"qid": ["1"], "text": ["x"]}))

    def test_errors(self):
        def fails(code, pattern, fn, *args, **kw):
            with self.assertRaises(clsearch.Error) as cm:
                fn(*args, **kw)
            self.assertEqual(cm.exception.code, code)
            self.assertRegex(cm.exception.message, pattern)

        fails("CLS_E_ARG", "and-or", self.ref.search, "x", mode="xor")
        fails("CLS_E_ARG", "0", self.ref.search, "x", k=0)
        fails("CLS_E_ARG", str(clsearch.MAX_K + 1), self.ref.search, "x", k=clsearch.MAX_K + 1)
        fails("CLS_E_FORMAT", "white space", self.ref.search, [("a b", "x")])
        fails("CLS_E_ARG", "12Q", clsearch.Engine, self.idx, device="ref", device_mem="12Q")
        fails("CLS_E_ARG", "60000", clsearch.Engine, self.idx, device="ref", batch_ms=-1)
        with self.assertRaises(clsearch.Error) as cm:
            clsearch.Engine(self.idx, device="no-such-device")
        self.assertTrue(cm.exception.message)
        with self.assertRaisesRegex(ValueError, "NUL"):
            self.ref.search("par\0allel")
        with self.assertRaises(ValueError):
            self.ref.search("x", k=-1)
        with self.assertRaises(TypeError):
            self.ref.search([("1", None)])
        with self.assertRaises(TypeError):
            self.ref.search([3])
        with self.assertRaises(ValueError):
            clsearch.read_topics(TOPICS, format="csv")
        fails("CLS_E_IO", "absent", clsearch.read_topics, TMP + "/absent.tsv")
        # after an error the engine is as before
        self.assertEqual(self.ref.search(QUERIES[:2], k=5), self.ref.search(QUERIES[:2], k=5))

    def test_device_mem(self):
        if not cpu_device():
            self.skipTest("SKIP: no OpenCL CPU device (POCL: pocl-opencl-icd)")
        with self.assertRaises(clsearch.Error) as cm:
            clsearch.Engine(self.idx, device="cpu", device_mem="4K")
        self.assertEqual(cm.exception.code, "CLS_E_DEVMEM")
        with clsearch.Engine(self.idx, device="cpu", device_mem="64M", batch_ms=5) as eng:
            runs.assert_same(self, eng.search(QUERIES, k=50), self.ref.search(QUERIES, k=50), "64M")

    def test_placement(self):
        if not cpu_device():
            self.skipTest("SKIP: no OpenCL CPU device (POCL: pocl-opencl-icd)")
        for placement in ("replicate", "shard", "auto"):
            with clsearch.Engine(self.idx, device="cpu,cpu", placement=placement) as eng:
                for mode in ("or", "and", "and-or"):
                    runs.assert_same(self, eng.search(QUERIES, k=50, mode=mode),
                                     self.ref.search(QUERIES, k=50, mode=mode), placement + " " + mode)
        with self.assertRaises(clsearch.Error) as cm:
            clsearch.Engine(self.idx, device="cpu,cpu", placement="spread")
        self.assertEqual(cm.exception.code, "CLS_E_ARG")


LTR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "ltr")


class TestRerank(unittest.TestCase):
    """search(..., rerank=Model): the second ranking stage, the same on every engine and as
    `clsearch search --rerank`."""

    @classmethod
    def setUpClass(cls):
        cls.idx = clsearch.Index(IDX)
        cls.ref = clsearch.Engine(cls.idx, device="ref")
        cls.lgb = clsearch.Model(LTR + "/cacm_lgb.txt")
        cls.xgb = clsearch.Model(LTR + "/cacm_xgb.json")

    @classmethod
    def tearDownClass(cls):
        cls.lgb.close()
        cls.xgb.close()
        cls.idx.close()

    def test_model(self):
        self.assertIn("LightGBM", self.lgb.describe())
        self.assertIn("XGBoost", self.xgb.describe())
        self.assertGreater(self.lgb.features, 1)
        with self.assertRaises(clsearch.Error):
            clsearch.Model(TMP + "/absent.txt")

    def test_engines_agree_and_equal_command(self):
        engines = [("host:2", clsearch.Engine(self.idx, device="host:2"))]
        if cpu_device():
            engines.append(("cpu", clsearch.Engine(self.idx, device="cpu")))
        try:
            for model in (self.lgb, self.xgb):
                for mode in clsearch.MODES:
                    want = self.ref.search(QUERIES, k=20, mode=mode, rerank=model, rerank_depth=60)
                    self.assertTrue(all(h.first_score is not None for h in want))
                    for name, eng in engines:
                        with self.subTest(device=name, mode=mode, model=model.path):
                            got = eng.search(QUERIES, k=20, mode=mode, rerank=model, rerank_depth=60)
                            runs.assert_same(self, got, want, "%s/ref %s" % (name, mode))
            out = TMP + "/rerank.run"
            subprocess.run([runs.BIN, "search", "-x", IDX, "-q", TOPICS, "-d", "ref", "-k", "20", "--rerank",
                            self.lgb.path, "--rerank-depth", "60", "-o", out], check=True, capture_output=True)
            with open(out) as f:
                cmd = [(q, d, int(r), sc) for q, _, d, r, sc, _ in (line.split() for line in f)]
            runs.assert_same(self, as_run(self.ref.search(QUERIES, k=20, rerank=self.lgb, rerank_depth=60)), cmd,
                             "command")
        finally:
            for _, eng in engines:
                eng.close()

    def test_first_scores_are_the_first_stage(self):
        first = {(h.qid, h.docid): h.score for h in self.ref.search(QUERIES, k=60)}
        hits = self.ref.search(QUERIES, k=20, rerank=self.lgb, rerank_depth=60)
        for h in hits:
            self.assertEqual(h.first_score, first[(h.qid, h.docid)])
        # ranked by the model's score, ties to the smaller docID
        for a, b in zip(hits, hits[1:]):
            if a.qid == b.qid:
                self.assertTrue(a.score > b.score or (a.score == b.score and a.docid < b.docid))
        # without a stage: no first_score
        self.assertIsNone(self.ref.search(QUERIES[:1], k=3)[0].first_score)

    def test_frame(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("SKIP: no pandas")
        df = self.ref.search(QUERIES, k=5, rerank=self.xgb, rerank_depth=30, as_frame=True)
        self.assertIn("first_score", df.columns)

    def test_errors(self):
        with self.assertRaises(TypeError):
            self.ref.search(QUERIES, k=5, rerank=LTR + "/cacm_lgb.txt")
        with self.assertRaises(ValueError):
            self.ref.search(QUERIES, k=5, rerank_depth=10)
        with self.assertRaises(ValueError):
            self.ref.search(QUERIES, k=5, rerank=self.lgb, rerank_depth=clsearch.MAX_K + 1)
        with clsearch.Model(LTR + "/lgb_reg.txt") as wide:
            with self.assertRaisesRegex(clsearch.Error, "feature table"):
                self.ref.search(QUERIES, k=5, rerank=wide)


class TestText(unittest.TestCase):
    """Text that is not UTF-8 reads as `search --json` prints it (U+FFFD for each byte outside a
    valid sequence); qids are checked as the command checks topics."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="text-", dir=TMP)
        trec = cls.dir + "/c.trec"
        with open(trec, "wb") as f:
            f.write(b"<DOC>\n<DOCNO> d\xff\xfe1 </DOCNO>\n<TEXT>apple pie</TEXT>\n</DOC>\n"
                    b"<DOC>\n<DOCNO> d\xe2\x82x </DOCNO>\n<TEXT>apple tart</TEXT>\n</DOC>\n")
        cls.idx_path = cls.dir + "/c.idx"
        subprocess.run([runs.BIN, "index", "-q", "-c", "trec", "-o", cls.idx_path, trec], check=True)
        cls.idx = clsearch.Index(cls.idx_path)
        cls.ref = clsearch.Engine(cls.idx, device="ref")

    @classmethod
    def tearDownClass(cls):
        cls.idx.close()

    def test_docnos_as_the_command_prints_them(self):
        got = sorted(h.docno for h in self.ref.search("apple", k=10))
        self.assertEqual(got, ["d\ufffd\ufffd1", "d\ufffd\ufffdx"])
        out = subprocess.run([runs.BIN, "search", "-x", self.idx_path, "-d", "ref", "--json", "apple"], check=True,
                             capture_output=True).stdout
        printed = sorted(json.loads(line.decode("utf-8"))["docno"] for line in out.splitlines())
        self.assertEqual(got, printed)

    def test_topics_qids(self):
        path = self.dir + "/t.tsv"
        with open(path, "wb") as f:
            f.write(b"\xff\xfe\tapple\n")
        self.assertEqual(clsearch.read_topics(path), [("\ufffd\ufffd", "apple")])

    def test_bad_qids_refused(self):
        with self.assertRaisesRegex(ValueError, "query id 'a' is given twice"):
            self.ref.search([("a", "apple"), ("a", "pie")])
        with self.assertRaisesRegex(ValueError, "query id '2' is given twice"):
            self.ref.search({1: "apple", 2: "pie", "2": "tart"})
        with self.assertRaisesRegex(ValueError, "a qid holds a NUL"):
            self.ref.search([("a\0b", "apple")])
        with self.assertRaisesRegex(ValueError, "a qid is not text UTF-8 can hold"):
            self.ref.search([(b"\xff".decode("utf-8", "surrogateescape"), "apple")])
        with self.assertRaisesRegex(ValueError, "query q is not text UTF-8 can hold"):
            self.ref.search([("q", "\udcff")])
        self.assertEqual(len(self.ref.search([("a", "apple"), ("b", "apple")], k=10)), 4)


class TestLifetime(unittest.TestCase):
    def test_engine_keeps_index(self):
        eng = clsearch.Engine(clsearch.Index(IDX), device="ref")  # no other reference to the index
        self.assertTrue(eng.search(QUERIES[:1], k=5))
        eng.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            eng.search("x")
        eng.close()

    def test_index_close_closes_engines(self):
        idx = clsearch.Index(IDX)
        eng = clsearch.Engine(idx, device="ref")
        idx.close()
        self.assertTrue(eng.closed)
        with self.assertRaisesRegex(ValueError, "closed"):
            eng.search("x")
        with self.assertRaisesRegex(ValueError, "closed"):
            clsearch.Engine(idx, device="ref")

    def test_garbage_collected(self):
        for _ in range(3):  # freed by the collector: no close, no crash
            clsearch.Engine(clsearch.Index(IDX), device="ref").search(QUERIES[:2], k=5)


class TestLoading(unittest.TestCase):
    def test_missing_library(self):
        env = dict(os.environ, CLSEARCH_LIBRARY=TMP + "/libabsent.so")
        p = subprocess.run([sys.executable, "-c", "import clsearch"], env=env, capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ImportError", p.stderr)
        self.assertIn("$CLSEARCH_LIBRARY: " + TMP + "/libabsent.so", p.stderr)

    def test_version(self):
        self.assertEqual(clsearch.library_version(), clsearch.__version__)

    def test_notice(self):
        lines = []
        clsearch.set_notice(lines.append)
        try:
            # a fresh cache folder: the CPU engine compiles, and says so first
            env_cache = os.environ.get("CLSEARCH_CACHE_DIR")
            os.environ["CLSEARCH_CACHE_DIR"] = tempfile.mkdtemp(dir=TMP)
            if not cpu_device():
                self.skipTest("SKIP: no OpenCL CPU device (POCL: pocl-opencl-icd)")
            with clsearch.Index(IDX) as idx:
                clsearch.Engine(idx, device="cpu").close()
            self.assertTrue(lines and lines[0].startswith("compiling kernels for "), lines)
        finally:
            clsearch.set_notice(None)
            if env_cache is None:
                os.environ.pop("CLSEARCH_CACHE_DIR", None)
            else:
                os.environ["CLSEARCH_CACHE_DIR"] = env_cache


if __name__ == "__main__":
    unittest.main()
