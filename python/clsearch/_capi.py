"""The C library through ctypes: finding libclsearch, the records of clsearch.h, the prototypes.

Nothing here is public; clsearch/__init__.py builds the Python API on it. Every record below
mirrors include/clsearch.h field for field; ctypes lays them out as the C compiler does.
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess

# The library's major version these bindings are written against (clsearch.h's
# CLSEARCH_VERSION_MAJOR): another major version may have changed the records below.
ABI_MAJOR = 0
SONAME = "libclsearch.so.%d" % ABI_MAJOR


def _pkg_config_libdir():
    """The libdir that `pkg-config clsearch` reports, or None (no pkg-config, no clsearch.pc)."""
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--variable=libdir", "clsearch"], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = out.stdout.strip()
    return libdir if out.returncode == 0 and libdir else None


def _candidates():
    """(how it was found, what to dlopen) in the order they are tried."""
    env = os.environ.get("CLSEARCH_LIBRARY")
    if env:
        # An explicit choice is the only one tried: falling back to another copy would hide
        # that the one asked for is missing.
        return [("$CLSEARCH_LIBRARY", env)]
    found = []
    name = ctypes.util.find_library("clsearch")
    if name:
        found.append(("ctypes.util.find_library('clsearch')", name))
    # The dynamic loader's own search: LD_LIBRARY_PATH, the ld.so cache, the default folders.
    found.append(("the dynamic loader", SONAME))
    libdir = _pkg_config_libdir()
    if libdir:
        found.append(("pkg-config --variable=libdir clsearch", os.path.normpath(os.path.join(libdir, SONAME))))
    return found


def load():
    """(the loaded library, what dlopen was given, how that was found); ImportError naming every
    place tried when none loads."""
    tried = []
    for how, what in _candidates():
        try:
            return _prototype(ctypes.CDLL(what)), what, how
        except OSError as e:
            tried.append("%s: %s (%s)" % (how, what, e))
        except AttributeError as e:
            # A library of that name that lacks our symbols: another clsearch, or a stale one.
            tried.append("%s: %s is not a clsearch %d.x library (%s)" % (how, what, ABI_MAJOR, e))
    raise ImportError("clsearch: cannot load the C library libclsearch; tried " + "; ".join(tried) +
                      ". Install it (cmake --install BUILD), or set CLSEARCH_LIBRARY to the path of "
                      "libclsearch.so")


# ---- Records ----------------------------------------------------------------------------------

# Records that the library fills by pointer and that later versions may extend at the end
# (clsearch.h says so of cls_engine_opts) get room behind their known fields, so a newer library
# writing its longer record never writes past ours.
_ROOM = ("_room", ctypes.c_uint8 * 256)


class AnalyzerOpts(ctypes.Structure):
    _fields_ = [("possessive", ctypes.c_int), ("lowercase", ctypes.c_int), ("stopwords", ctypes.c_int),
                ("stem", ctypes.c_int), _ROOM]


class IndexStats(ctypes.Structure):
    _fields_ = [("num_docs", ctypes.c_uint32), ("num_terms", ctypes.c_uint32),
                ("num_postings", ctypes.c_uint64), ("num_tokens", ctypes.c_uint64),
                ("avg_doc_len", ctypes.c_double), ("block_size", ctypes.c_uint32),
                ("codec", ctypes.c_int), ("pfor_depth", ctypes.c_uint), ("num_blocks", ctypes.c_uint64),
                ("postings_bytes", ctypes.c_uint64), ("doc_bits", ctypes.c_uint64),
                ("freq_bits", ctypes.c_uint64), ("meta_bytes", ctypes.c_uint64),
                ("file_bytes", ctypes.c_uint64), _ROOM]


class SearchParams(ctypes.Structure):
    _fields_ = [("k", ctypes.c_uint32), ("mode", ctypes.c_int), ("k1", ctypes.c_float),
                ("b", ctypes.c_float), ("deadline_ms", ctypes.c_double), ("rerank", ctypes.c_void_p),
                ("rerank_depth", ctypes.c_uint32), _ROOM]


class EngineOpts(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("device_mem", ctypes.c_uint64), ("batch_ms", ctypes.c_double),
                ("placement", ctypes.c_int), _ROOM]


# Arrays the library hands out: read element by element, so these must match exactly.
class ProfileStep(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("transfer", ctypes.c_int), ("seconds", ctypes.c_double),
                ("bytes", ctypes.c_uint64)]


class Counter(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_uint64)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("platform", ctypes.c_uint), ("device", ctypes.c_uint),
                ("platform_name", ctypes.c_char * 128), ("platform_version", ctypes.c_char * 128),
                ("name", ctypes.c_char * 128), ("vendor", ctypes.c_char * 128),
                ("driver_version", ctypes.c_char * 64), ("opencl_c_version", ctypes.c_char * 64),
                ("is_gpu", ctypes.c_int), ("compute_units", ctypes.c_uint),
                ("global_mem", ctypes.c_uint64), ("local_mem", ctypes.c_uint64),
                ("max_alloc", ctypes.c_uint64), ("max_work_group", ctypes.c_size_t),
                ("clock_mhz", ctypes.c_uint), ("extensions", ctypes.c_char * 256)]


NOTICE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
TOPIC_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)


def _prototype(lib):
    """Declares the signatures of the functions used; an AttributeError when one is missing."""
    P = ctypes.POINTER
    vp, cp, st = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int  # handles, strings, cls_status
    size, u32 = ctypes.c_size_t, ctypes.c_uint32
    sigs = {
        "cls_status_str": (cp, [st]),
        "cls_last_error": (cp, []),
        "cls_version": (cp, []),
        "cls_set_notice": (None, [NOTICE_FN, vp]),
        "cls_topics_read": (st, [ctypes.c_int, cp, TOPIC_FN, vp]),
        "cls_index_open": (st, [cp, P(vp)]),
        "cls_index_close": (None, [vp]),
        "cls_index_check": (st, [vp, ctypes.c_uint]),
        "cls_index_get_stats": (None, [vp, P(IndexStats)]),
        "cls_index_docno": (cp, [vp, u32]),
        "cls_index_analyzer": (None, [vp, P(AnalyzerOpts)]),
        "cls_codec_name": (cp, [ctypes.c_int]),
        "cls_batch_create": (st, [vp, P(vp)]),
        "cls_batch_add": (st, [vp, cp, cp]),
        "cls_batch_clear": (None, [vp]),
        "cls_batch_count": (size, [vp]),
        "cls_batch_qid": (cp, [vp, size]),
        "cls_batch_free": (None, [vp]),
        "cls_mode_name": (cp, [ctypes.c_int]),
        "cls_mode_parse": (st, [cp, P(ctypes.c_int)]),
        "cls_search_defaults": (None, [P(SearchParams)]),
        "cls_engine_opts_init": (None, [P(EngineOpts)]),
        "cls_parse_bytes": (st, [cp, P(ctypes.c_uint64)]),
        "cls_placement_parse": (st, [cp, P(ctypes.c_int)]),
        "cls_engine_create_opts": (st, [vp, P(EngineOpts), P(vp)]),
        "cls_engine_free": (None, [vp]),
        "cls_engine_describe": (cp, [vp]),
        "cls_engine_search": (st, [vp, vp, P(SearchParams), vp]),
        "cls_engine_profile": (size, [vp, P(P(ProfileStep)), P(u32)]),
        "cls_engine_counters": (size, [vp, P(P(Counter))]),
        "cls_results_create": (st, [P(vp)]),
        "cls_results_free": (None, [vp]),
        "cls_results_count": (size, [vp]),
        "cls_results_get": (None, [vp, size, P(size), P(P(u32)), P(P(ctypes.c_float))]),
        "cls_results_get_first": (None, [vp, size, P(size), P(P(ctypes.c_float))]),
        "cls_results_reranked": (ctypes.c_int, [vp]),
        "cls_model_load": (st, [cp, P(vp)]),
        "cls_model_free": (None, [vp]),
        "cls_model_describe": (cp, [vp]),
        "cls_model_features": (u32, [vp]),
        "cls_devices_list": (st, [P(P(DeviceInfo)), P(size)]),
        "cls_devices_free": (None, [P(DeviceInfo)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    major = int(lib.cls_version().decode().split(".")[0])
    if major != ABI_MAJOR:
        raise AttributeError("version %s, not %d.x" % (lib.cls_version().decode(), ABI_MAJOR))
    return lib
