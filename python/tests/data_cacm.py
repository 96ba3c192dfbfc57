"""CACM through the Python bindings: Anserini's topics, 1000 hits each, OR, equal to
`clsearch search` on the reference engine and on the OpenCL CPU device (POCL).
Run by `tests/python.sh ... --data DATA` (CTest `python_data`), which checks the files first."""

import os
import shutil
import subprocess
import tempfile
import unittest

import clsearch
import runs

DATA = os.environ.get("CLS_DATA_DIR", "") + "/cacm"


class TestCacm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="python-cacm-", dir=os.environ.get("CLS_TEST_TMP"))
        cls.idx = cls.tmp + "/cacm.idx"
        subprocess.run([runs.BIN, "index", "-q", "-c", "html", "-o", cls.idx, DATA + "/cacm.tar.gz"], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_equal_to_command(self):
        topics = clsearch.read_topics(DATA + "/topics.cacm.txt")
        self.assertEqual(len(topics), 64)
        devices = ["ref"] + (["cpu"] if any(not d["is_gpu"] for d in clsearch.devices()) else [])
        with clsearch.Index(self.idx) as idx:
            self.assertEqual(len(idx), 3204)
            for device in devices:
                with self.subTest(device=device):
                    hits = clsearch.Engine(idx, device=device).search(topics)
                    want = runs.command_run(self.idx, DATA + "/topics.cacm.txt", device, self.tmp + "/cacm.run")
                    runs.assert_same(self, runs.as_run(hits), want, device)
        if devices == ["ref"]:
            self.skipTest("SKIP: no OpenCL CPU device (POCL: pocl-opencl-icd): the reference engine only")


if __name__ == "__main__":
    unittest.main()
