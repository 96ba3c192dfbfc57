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
# pip builds in the folder it is given (setuptools' build/ and *.egg-info): a copy keeps the
# source tree clean.
cp -R "$src/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp/python"/*.egg-info
wheels=/usr/share/python-wheels
if [ -d "$wheels" ]; then
  "$tmp/venv/bin/pip" install -q --no-index --find-links "$wheels" "$tmp/python"
else
  "$tmp/venv/bin/pip" install -q "$tmp/python" # not Debian: setuptools from the package index
fi
"$build/clsearch" generate -o "$tmp/gen" --docs 200 --queries 3 >/dev/null
"$build/clsearch" index -q -c jsonl -o "$tmp/gen.idx" "$tmp/gen/corpus.jsonl"
check='
import re, sys, clsearch
with clsearch.Index(sys.argv[1]) as idx:
    hits = clsearch.Engine(idx, device="ref").search(clsearch.read_topics(sys.argv[2]), k=3)
assert hits and hits[0].rank == 0, hits
assert re.match(sys.argv[3], clsearch.LIBRARY_FOUND_BY), clsearch.LIBRARY_FOUND_BY
print("%s: clsearch %s, library %s %s found by %s: %d hits" % (clsearch.__file__, clsearch.__version__,
      clsearch.library_version(), clsearch.LIBRARY, clsearch.LIBRARY_FOUND_BY, len(hits)))
'
cd "$tmp" # not the source tree: the installed package, not python/clsearch
unset CLSEARCH_LIBRARY PYTHONPATH
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/venv/bin/python" -c "$check" "$tmp/gen.idx" "$tmp/gen/topics.tsv" \
  "ctypes.util.find_library|the dynamic loader" # find_library needs ld or gcc to read LD_LIBRARY_PATH
unset PKG_CONFIG_SYSROOT_DIR
PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" "$tmp/venv/bin/python" -c "$check" \
  "$tmp/gen.idx" "$tmp/gen/topics.tsv" "pkg-config"
