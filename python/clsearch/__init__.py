"""clsearch from Python: open an index, make an engine on a device, run queries.

    import clsearch
    with clsearch.Index("cacm.idx") as idx:
        engine = clsearch.Engine(idx, device="ref")
        for hit in engine.search("parallel algorithms", k=10):
            print(hit.qid, hit.rank, hit.docno, hit.score)

The bindings are ctypes over the installed C library (libclsearch.so; $CLSEARCH_LIBRARY names
another). Results are those of `clsearch search`: the same documents in the same order with the
same scores. Ranks count from 0, as PyTerrier's do (a TREC run file counts from 1). With
pandas, search returns a DataFrame with PyTerrier's columns (qid, docid, docno, rank, score).

Text: docnos and topics come from files and may hold any bytes; each byte that is not part of a
valid UTF-8 sequence becomes U+FFFD, the rule of `clsearch search --json` and the server, so the
three give the same strings. A qid or query must be text that UTF-8 can hold, without NUL, and a
qid given twice in one search is a ValueError, as the command refuses a topics file that
repeats one.

Every failing library call raises clsearch.Error, carrying the library's status and message.
Handles are freed by close() or a with block, else when garbage-collected. An Engine keeps its
Index alive; closing the Index closes its engines first. Threads may share them as the C
library allows: an Index, once open, by any number of threads and engines at once; an Engine by
several threads, whose calls run one at a time (a lock over the engine and the batch and results
it reuses), so threads that need searches side by side each open their own Engine on the same
Index. Close an Index or an Engine only once no other thread is using it.
"""

import codecs
import collections
import threading
import weakref

from . import _capi

__version__ = "0.1.0"
__all__ = ["Error", "Index", "Engine", "Model", "Hit", "ProfileStep", "devices", "read_topics", "library_version",
           "set_notice", "MAX_K", "MODES", "TOPICS_FORMATS", "LIBRARY", "LIBRARY_FOUND_BY"]

_lib, LIBRARY, LIBRARY_FOUND_BY = _capi.load()  # what dlopen was given, and how it was found

MAX_K = 100000  # clsearch.h's CLS_MAX_K


def _mode_names():
    # cls_mode's values in order, named as the library names them (cls_mode_name, NULL past the
    # last): a mode added in C is here without a Python edit
    names = []
    while True:
        name = _lib.cls_mode_name(len(names))
        if name is None:
            return tuple(names)
        names.append(name.decode("ascii"))


MODES = _mode_names()  # "or", ...: the names search's mode takes, from the library

# cls_status values, by the names clsearch.h gives them.
STATUS_NAMES = ("CLS_OK", "CLS_E_ARG", "CLS_E_NOMEM", "CLS_E_IO", "CLS_E_FORMAT", "CLS_E_CORRUPT",
                "CLS_E_VERSION", "CLS_E_NODEVICE", "CLS_E_OPENCL", "CLS_E_BUILD", "CLS_E_DEVMEM",
                "CLS_E_MISMATCH")

# cls_topics_format's values in order, by the names of `clsearch search -f`.
TOPICS_FORMATS = ("tsv", "anserini", "trec", "smart", "mq", "auto")

Hit = collections.namedtuple("Hit", "qid docno rank score docid first_score", defaults=(None,))
Hit.__doc__ = ("One search result: rank counts from 0 within its query; docid is the index's docID; with "
               "a second ranking stage (search's rerank), score is the model's and first_score the first "
               "stage's (else None).")
ProfileStep = collections.namedtuple("ProfileStep", "name transfer seconds bytes")


class Error(Exception):
    """A failed library call: status (the cls_status number), name (cls_status_str: "invalid
    argument"), message (cls_last_error: the detail) and call (the C function)."""

    def __init__(self, status, name, message, call=None):
        super().__init__(status, name, message, call)
        self.status, self.name, self.message, self.call = status, name, message, call

    @property
    def code(self):
        """The status as clsearch.h names it ("CLS_E_ARG")."""
        return STATUS_NAMES[self.status] if 0 <= self.status < len(STATUS_NAMES) else str(self.status)

    def __str__(self):
        return "%s: %s" % (self.name, self.message) if self.message else self.name


def _one_per_byte(err):
    # Python's "replace" gives one U+FFFD for a whole truncated sequence; the C side (util/utf8.h)
    # gives one for each byte not in a valid sequence, and the outputs are to agree
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("clsearch.replace", _one_per_byte)


def _text(b):
    return b.decode("utf-8", "clsearch.replace") if b is not None else None


def _check(status, call):
    if status != 0:
        raise Error(status, _text(_lib.cls_status_str(status)), _text(_lib.cls_last_error()), call)


def _cstr(value, what):
    """value as a C string: a str without NUL characters (a C string would end there, dropping
    the rest silently)."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (what, type(value).__name__))
    if "\0" in value:
        raise ValueError("%s holds a NUL character: %r" % (what, value))
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate (text decoded with surrogateescape)
        raise ValueError("%s is not text UTF-8 can hold (%r at %d): %r" % (what, value[e.start], e.start, value)) \
            from None


def library_version():
    """The loaded C library's version ("0.1.0")."""
    return _text(_lib.cls_version())


_notice_keep = None  # the ctypes callback set, kept alive while the library may call it


def set_notice(fn):
    """Sends the library's notices (a line before slow work, such as compiling kernels the first
    time on a device) to fn(line), on the thread doing the work; None sends them nowhere, the
    default. Process-wide, as cls_set_notice."""
    global _notice_keep
    if fn is None:
        _lib.cls_set_notice(_capi.NOTICE_FN(), None)
        _notice_keep = None
        return
    if not callable(fn):
        raise TypeError("set_notice needs a callable or None")
    cb = _capi.NOTICE_FN(lambda user, line: fn(_text(line)))
    _lib.cls_set_notice(cb, None)
    _notice_keep = cb


def devices():
    """Every OpenCL device as a dict (platform and device give the "P:D" spec); [] without an
    OpenCL platform."""
    arr = _capi.ctypes.POINTER(_capi.DeviceInfo)()
    n = _capi.ctypes.c_size_t()
    _check(_lib.cls_devices_list(_capi.ctypes.byref(arr), _capi.ctypes.byref(n)), "cls_devices_list")
    try:
        out = []
        for i in range(n.value):
            d = arr[i]
            row = {}
            for name, _ in _capi.DeviceInfo._fields_:
                v = getattr(d, name)
                row[name] = _text(v) if isinstance(v, bytes) else v
            row["is_gpu"] = bool(row["is_gpu"])
            row["spec"] = "%d:%d" % (d.platform, d.device)
            out.append(row)
        return out
    finally:
        if n.value:
            _lib.cls_devices_free(arr)


def read_topics(path, format="auto"):
    """The topics of a file as a list of (qid, text), in file order (`clsearch search -q`'s
    reader). format: one of TOPICS_FORMATS; "auto" guesses from the first non-blank line."""
    if format not in TOPICS_FORMATS:
        raise ValueError("unknown topics format %r: one of %s" % (format, ", ".join(TOPICS_FORMATS)))
    out = []

    def add(user, qid, text):
        out.append((_text(qid), _text(text)))
        return 0

    cb = _capi.TOPIC_FN(add)
    _check(_lib.cls_topics_read(TOPICS_FORMATS.index(format), _cstr(str(path), "the topics path"), cb, None),
           "cls_topics_read")
    return out


class _Closable:
    """A handle freed by close(), which a with block calls at its end."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Index(_Closable):
    """An index file, opened (metadata checked) by cls_index_open. Use as a context manager or
    call close(); len(index) is its number of documents."""

    def __init__(self, path):
        self.path = str(path)
        self._h = None
        self._engines = weakref.WeakSet()
        h = _capi.ctypes.c_void_p()
        _check(_lib.cls_index_open(_cstr(self.path, "the index path"), _capi.ctypes.byref(h)), "cls_index_open")
        self._h = h
        st = _capi.IndexStats()
        _lib.cls_index_get_stats(h, _capi.ctypes.byref(st))
        # The names of `clsearch stats --json`, plus the stream sizes it prints as text.
        self._stats = {
            "documents": st.num_docs, "terms": st.num_terms, "postings": st.num_postings,
            "tokens": st.num_tokens, "avg_doc_len": st.avg_doc_len,
            "codec": _text(_lib.cls_codec_name(st.codec)), "block_size": st.block_size,
            "pfor_depth": st.pfor_depth, "blocks": st.num_blocks, "postings_bytes": st.postings_bytes,
            "doc_bits": st.doc_bits, "freq_bits": st.freq_bits, "meta_bytes": st.meta_bytes,
            "file_bytes": st.file_bytes,
        }
        an = _capi.AnalyzerOpts()
        _lib.cls_index_analyzer(h, _capi.ctypes.byref(an))
        self._analyzer = {k: bool(getattr(an, k)) for k in ("possessive", "lowercase", "stopwords", "stem")}

    def _handle(self):
        if self._h is None:
            raise ValueError("the index %s is closed" % self.path)
        return self._h

    @property
    def closed(self):
        return self._h is None

    @property
    def stats(self):
        """A dict: documents, terms, postings, tokens, avg_doc_len, codec, block_size, pfor_depth,
        blocks, postings_bytes, doc_bits, freq_bits, meta_bytes, file_bytes."""
        self._handle()
        return dict(self._stats)

    @property
    def analyzer(self):
        """How the index's text (and so its queries' text) is analysed: a dict of booleans."""
        self._handle()
        return dict(self._analyzer)

    documents = property(lambda self: self.stats["documents"], doc="number of documents")
    terms = property(lambda self: self.stats["terms"], doc="number of distinct terms")
    postings = property(lambda self: self.stats["postings"], doc="(term, document) pairs")
    tokens = property(lambda self: self.stats["tokens"], doc="indexed term occurrences")
    codec = property(lambda self: self.stats["codec"], doc="the postings' codec name")
    block_size = property(lambda self: self.stats["block_size"], doc="postings per block")

    def __len__(self):
        return self.documents

    def docno(self, docid):
        """The external identifier of docID docid (0 .. len(index) - 1)."""
        h = self._handle()
        if not isinstance(docid, int) or isinstance(docid, bool):
            raise TypeError("a docID is an int, not %s" % type(docid).__name__)
        s = _lib.cls_index_docno(h, docid) if 0 <= docid < self._stats["documents"] else None
        if s is None:
            raise IndexError("docID %d is out of range (the index has %d documents)" %
                             (docid, self._stats["documents"]))
        return _text(s)

    def check(self, threads=0):
        """Verifies every posting (`clsearch check`); raises Error naming the first problem."""
        if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads < 1 << 32:
            raise ValueError("threads is a count, 0 for one per core, not %r" % (threads,))
        _check(_lib.cls_index_check(self._handle(), threads), "cls_index_check")

    def close(self):
        """Closes the index, and before it every Engine made on it. Idempotent."""
        if self._h is None:
            return
        for e in list(self._engines):
            e.close()
        _lib.cls_index_close(self._h)
        self._h = None

    def __del__(self):
        # At interpreter exit the module's globals may already be gone; the process frees all.
        if getattr(self, "_h", None) is not None and _lib is not None:
            self.close()

    def __repr__(self):
        if self._h is None:
            return "<clsearch.Index %s (closed)>" % self.path
        return "<clsearch.Index %s: %d documents, %d terms, %s>" % (
            self.path, self._stats["documents"], self._stats["terms"], self._stats["codec"])


def _queries(queries):
    """queries as a list of (qid, text) and whether they came as a DataFrame."""
    if isinstance(queries, str):
        return [("1", queries)], False
    if hasattr(queries, "columns") and hasattr(queries, "itertuples"):  # a pandas DataFrame
        missing = [c for c in ("qid", "query") if c not in queries.columns]
        if missing:
            raise ValueError("a DataFrame of queries needs the columns qid and query (PyTerrier's); "
                             "it lacks %s" % ", ".join(missing))
        return [(str(q), t) for q, t in zip(queries["qid"], queries["query"])], True
    if isinstance(queries, dict):
        return [(str(q), t) for q, t in queries.items()], False
    out = []
    for i, q in enumerate(queries):
        if isinstance(q, str):
            out.append((str(i + 1), q))
        elif isinstance(q, (tuple, list)) and len(q) == 2:
            out.append((str(q[0]), q[1]))
        else:
            raise TypeError("query %d is neither a str nor a (qid, text) pair: %r" % (i + 1, q))
    return out, False


def _frame_module():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("clsearch: a DataFrame result needs pandas (Debian: apt-get install "
                          "python3-pandas; or pip install pandas)") from e
    return pandas


class Model(_Closable):
    """A tree-ensemble ranking model for a second ranking stage (cls_model_load): a LightGBM text
    model or an XGBoost JSON model over the feature table's columns, numbered as `clsearch
    features` writes them (from 1; `clsearch features --list`). Engine.search(..., rerank=model)
    re-ranks the first stage's top rerank_depth by it. Use as a context manager or call close();
    searches of several engines and threads may share one."""

    def __init__(self, path):
        self.path = str(path)
        self._h = None
        h = _capi.ctypes.c_void_p()
        _check(_lib.cls_model_load(_cstr(self.path, "the model path"), _capi.ctypes.byref(h)), "cls_model_load")
        self._h = h

    def _handle(self):
        if self._h is None:
            raise ValueError("the model %s is closed" % self.path)
        return self._h

    @property
    def closed(self):
        return self._h is None

    @property
    def features(self):
        """The feature columns the model reads (its highest feature id + 1)."""
        return int(_lib.cls_model_features(self._handle()))

    def describe(self):
        """One line for a person: the library, objective, trees, features and the file."""
        return _text(_lib.cls_model_describe(self._handle()))

    def close(self):
        if self._h is not None:
            _lib.cls_model_free(self._h)
            self._h = None


class Engine(_Closable):
    """A query engine over an index on its devices (cls_engine_create_opts).

    device: "auto" (first GPU, else first CPU device), "gpu", "cpu", "host" (the host executor:
    every core, no OpenCL; "host:N" for N threads), "all" (every GPU and the host executor),
    "ref" (the plain-C reference engine), "P:D" as devices() numbers them, or a list of these
    ("host,1:0"); None: $CLSEARCH_DEVICE, else "auto". device_mem: bytes of device memory the engine may take, an int or a string as
    the command line writes it ("512M"); None: $CLSEARCH_DEVICE_MEM, else the device's.
    batch_ms: the wall time a device batch aims at; None: $CLSEARCH_BATCH_MS, else 25.
    placement: how a device list ("1:0,1:2", or "gpu" on a host of several) holds the index:
    "replicate" (each device all of it), "shard" (each a range of the documents, every search on
    each, merged) or "auto" (None: shard where the index does not fit every device).
    """

    def __init__(self, index, device=None, device_mem=None, batch_ms=None, placement=None):
        if not isinstance(index, Index):
            raise TypeError("Engine needs a clsearch.Index, not %s" % type(index).__name__)
        self.index = index  # keeps the index alive as long as the engine
        self._h = self._batch = self._results = None
        self._lock = threading.Lock()
        ct = _capi.ctypes
        o = _capi.EngineOpts()
        _lib.cls_engine_opts_init(ct.byref(o))
        dev = None if device is None else _cstr(device, "the device")
        o.device = dev
        if device_mem is not None:
            if isinstance(device_mem, str):
                v = ct.c_uint64()
                _check(_lib.cls_parse_bytes(_cstr(device_mem, "device_mem"), ct.byref(v)), "cls_parse_bytes")
                o.device_mem = v.value
            elif isinstance(device_mem, int) and not isinstance(device_mem, bool) and 0 < device_mem < 1 << 64:
                o.device_mem = device_mem
            else:
                raise ValueError("device_mem is a positive byte count (an int, or a str such as '512M'), "
                                 "not %r" % (device_mem,))
        if batch_ms is not None:
            o.batch_ms = float(batch_ms)
        if placement is not None:
            v = ct.c_int()
            _check(_lib.cls_placement_parse(_cstr(placement, "placement"), ct.byref(v)), "cls_placement_parse")
            o.placement = v.value
        ih = index._handle()
        h = ct.c_void_p()
        _check(_lib.cls_engine_create_opts(ih, ct.byref(o), ct.byref(h)), "cls_engine_create_opts")
        self._h = h
        index._engines.add(self)
        # One batch and one result set for the engine's life: a search clears and refills them.
        try:
            b, r = ct.c_void_p(), ct.c_void_p()
            _check(_lib.cls_batch_create(ih, ct.byref(b)), "cls_batch_create")
            self._batch = b
            _check(_lib.cls_results_create(ct.byref(r)), "cls_results_create")
            self._results = r
        except Error:
            self.close()
            raise
        self.device = device

    def _handle(self):
        if self._h is None:
            raise ValueError("the engine is closed")
        return self._h

    @property
    def closed(self):
        return self._h is None

    def describe(self):
        """The engine described for a person (`clsearch search -v`): the device and why, the
        kernels, the programs. For reading, not parsing."""
        return _text(_lib.cls_engine_describe(self._handle()))

    def search(self, queries, k=1000, mode="or", k1=0.9, b=0.4, as_frame=None, deadline_ms=0, rerank=None,
               rerank_depth=0):
        """Runs queries in one batch and returns their top k, query by query in the order given.

        queries: a str (one query, qid "1"), a list of str (qids "1", "2", ...), a list of
        (qid, text) pairs, a dict qid -> text, or a pandas DataFrame with columns qid and query.
        mode: one of MODES (cls_mode_parse refuses any other); k1, b: BM25's.
        deadline_ms: the time the search should take (0: none); on an engine of several executors
        it orders waiting searches, earliest deadline first, and a search ending later counts its
        queries in counters()["queries_late"]; results never depend on it.
        rerank: a Model, a second ranking stage: the first stage keeps each query's top
        rerank_depth (0: 1000), the model re-ranks them (ties to the smaller docid) and the top k
        are returned, score the model's and first_score the first stage's (a DataFrame then has
        a first_score column). The same on every device, bit for bit.
        Returns a list of Hit(qid, docno, rank, score, docid), rank from 0; or, with as_frame
        (the default when queries is a DataFrame), a pandas DataFrame with columns qid, docid,
        docno, rank, score (and query, when queries was a DataFrame).
        """
        pairs, from_frame = _queries(queries)
        if as_frame is None:
            as_frame = from_frame
        pd = _frame_module() if as_frame else None
        encoded = [(_cstr(q, "a qid"), _cstr(t, "the text of query %s" % q)) for q, t in pairs]
        seen = set()
        for q, _ in encoded:
            if q in seen:  # its hits would be two queries' under one name
                raise ValueError("query id %r is given twice: query ids must be unique" % _text(q))
            seen.add(q)
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError("k is an int, not %s" % type(k).__name__)
        if not 0 <= k < 1 << 32:
            raise ValueError("k must be from 1 to %d, not %d" % (MAX_K, k))
        ct = _capi.ctypes
        p = _capi.SearchParams()
        _lib.cls_search_defaults(ct.byref(p))
        m = ct.c_int()
        _check(_lib.cls_mode_parse(_cstr(mode, "the mode"), ct.byref(m)), "cls_mode_parse")
        p.k, p.mode, p.k1, p.b, p.deadline_ms = k, m.value, float(k1), float(b), float(deadline_ms)
        if rerank is not None:
            if not isinstance(rerank, Model):
                raise TypeError("rerank is a clsearch.Model, not %s" % type(rerank).__name__)
            if isinstance(rerank_depth, bool) or not isinstance(rerank_depth, int):
                raise TypeError("rerank_depth is an int, not %s" % type(rerank_depth).__name__)
            if not 0 <= rerank_depth <= MAX_K:
                raise ValueError("rerank_depth must be from 1 to %d (0: 1000), not %d" % (MAX_K, rerank_depth))
            p.rerank, p.rerank_depth = rerank._handle(), rerank_depth
        elif rerank_depth:
            raise ValueError("rerank_depth goes with rerank=Model(...)")
        rows = []
        with self._lock:
            h = self._handle()
            if encoded:
                _lib.cls_batch_clear(self._batch)
                for qid, text in encoded:
                    _check(_lib.cls_batch_add(self._batch, qid, text), "cls_batch_add")
                _check(_lib.cls_engine_search(h, self._batch, ct.byref(p), self._results), "cls_engine_search")
                rows = self._rows(pairs)
        if not as_frame:
            return rows
        cols = ["qid", "docid", "docno", "rank", "score"]
        df = pd.DataFrame([(r.qid, r.docid, r.docno, r.rank, r.score) for r in rows], columns=cols)
        df = df.astype({"docid": "int64", "rank": "int64", "score": "float64"})
        if rerank is not None:
            df["first_score"] = pd.Series([r.first_score for r in rows], dtype="float64")
        if from_frame:
            text = dict(pairs)
            df["query"] = [text[q] for q in df["qid"]]
        return df

    def _rows(self, pairs):
        ct = _capi.ctypes
        n = ct.c_size_t()
        docs = ct.POINTER(ct.c_uint32)()
        scores = ct.POINTER(ct.c_float)()
        first = ct.POINTER(ct.c_float)()
        idx = self.index._handle()
        reranked = bool(_lib.cls_results_reranked(self._results))
        rows = []
        for i, (qid, _) in enumerate(pairs):
            _lib.cls_results_get(self._results, i, ct.byref(n), ct.byref(docs), ct.byref(scores))
            fs = [None] * n.value
            if reranked:
                _lib.cls_results_get_first(self._results, i, ct.byref(n), ct.byref(first))
                fs = first[:n.value]
            for rank, (d, s, f) in enumerate(zip(docs[:n.value], scores[:n.value], fs)):
                rows.append(Hit(qid, _text(_lib.cls_index_docno(idx, d)), rank, s, d, f))
        return rows

    def profile(self):
        """The last search's device time by step and its number of device batches:
        ([ProfileStep(name, transfer, seconds, bytes), ...], batches). The reference engine
        has no steps."""
        ct = _capi.ctypes
        steps = ct.POINTER(_capi.ProfileStep)()
        batches = ct.c_uint32()
        with self._lock:
            n = _lib.cls_engine_profile(self._handle(), ct.byref(steps), ct.byref(batches))
            out = [ProfileStep(_text(steps[i].name), bool(steps[i].transfer), steps[i].seconds, steps[i].bytes)
                   for i in range(n)]
        return out, batches.value

    def counters(self):
        """What the last search did, counted: a dict name -> value ({} for the reference engine)."""
        ct = _capi.ctypes
        c = ct.POINTER(_capi.Counter)()
        with self._lock:
            n = _lib.cls_engine_counters(self._handle(), ct.byref(c))
            return {_text(c[i].name): c[i].value for i in range(n)}

    def close(self):
        """Frees the engine, its batch and its results. Idempotent."""
        with self._lock:
            if self._results is not None:
                _lib.cls_results_free(self._results)
                self._results = None
            if self._batch is not None:
                _lib.cls_batch_free(self._batch)
                self._batch = None
            if self._h is not None:
                _lib.cls_engine_free(self._h)
                self._h = None

    def __del__(self):
        if getattr(self, "_lock", None) is not None and _lib is not None:
            self.close()

    def __repr__(self):
        state = "closed" if self._h is None else (self.describe().split("\n")[0])
        return "<clsearch.Engine on %s: %s>" % (self.index.path, state)
