#!/bin/sh
# `pip install ./python` as a user would, offline: cmake --install into a temporary prefix, a
# fresh venv, pip with no index (setuptools and wheel from Debian's /usr/share/python-wheels),
# then the installed package finds the installed library by itself, through the dynamic loader
# (LD_LIBRARY_PATH) and through pkg-config, and runs a query.
#   python_install.sh PYTHON BUILD_DIR SOURCE_DIR
set -eu
py=$1 build=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/usr" >/dev/null
so=$(find "$tmp/usr" -name 'libclsearch.so.0' | head -1)
libdir=$(dirname "$so")
"$py" -m venv "$tmp/venv"
# straight from the source tree, as the README does (python/setup.py keeps it clean)
wheels=/usr/share/python-wheels
if [ -d "$wheels" ]; then
  "$tmp/venv/bin/pip" install -q --no-index --find-links "$wheels" "$src/python"
else
  "$tmp/venv/bin/pip" install -q "$src/python" # not Debian: setuptools from the package index
fi
"$build/clsearch" generate -o "$tmp/gen" --docs 200 --queries 3 >/dev/null
"$build/clsearch" index -q -c jsonl -o "$tmp/gen.idx" "$tmp/gen/corpus.jsonl"
# Which libclsearch the process mapped: the installed one under $tmp, whatever else the machine
# has (a copy installed system-wide is found first by name, and the dynamic loader then takes
# LD_LIBRARY_PATH's).
check='
import ctypes, re, sys, clsearch
from clsearch import _capi
with clsearch.Index(sys.argv[1]) as idx:
    hits = clsearch.Engine(idx, device="ref").search(clsearch.read_topics(sys.argv[2]), k=3)
assert hits and hits[0].rank == 0, hits
mapped = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libclsearch.so" in l})
by_pc = clsearch.LIBRARY_FOUND_BY.startswith("pkg-config")
if sys.argv[3] == "loader" or by_pc:
    assert mapped and all(m.startswith(sys.argv[4]) for m in mapped), (mapped, sys.argv[4])
if sys.argv[3] == "pkg-config":
    # the pkg-config candidate names the installed copy, and loads; it is the one used unless a
    # copy installed system-wide is found before it by name
    pc = [w for how, w in _capi._candidates() if how.startswith("pkg-config")]
    assert pc and pc[0].startswith(sys.argv[4]), _capi._candidates()
    ctypes.CDLL(pc[0])
print("%s: clsearch %s, library %s %s found by %s, mapped %s: %d hits" % (clsearch.__file__, clsearch.__version__,
      clsearch.library_version(), clsearch.LIBRARY, clsearch.LIBRARY_FOUND_BY, mapped[0], len(hits)))
'
cd "$tmp" # not the source tree: the installed package, not python/clsearch
unset CLSEARCH_LIBRARY PYTHONPATH
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/venv/bin/python" -c "$check" "$tmp/gen.idx" "$tmp/gen/topics.tsv" \
  loader "$tmp/usr"
unset PKG_CONFIG_SYSROOT_DIR
PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" "$tmp/venv/bin/python" -c "$check" \
  "$tmp/gen.idx" "$tmp/gen/topics.tsv" pkg-config "$tmp/usr"
# the source tree stays as it was: setuptools' working folders went elsewhere (python/setup.py)
for d in "$src/python/build" "$src/python/clsearch.egg-info"; do
  if [ -e "$d" ]; then echo "python_install: pip left $d in the source tree" >&2; exit 1; fi
done
