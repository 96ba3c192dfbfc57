#!/bin/sh
# The Python bindings' unittest (python/tests) on this build's command and library:
#   python.sh PYTHON LIBRARY SOURCE_DIR             the generated-collection suite (test_*.py)
#   python.sh PYTHON LIBRARY SOURCE_DIR --data DATA CACM through the bindings (data_cacm.py);
#                                                   exits 77 (skipped), naming what is absent
# CTest's environment gives CLSEARCH_BIN, CLS_TEST_TMP and CLSEARCH_CACHE_DIR.
set -eu
py=$1 lib=$2 src=$3
export CLSEARCH_LIBRARY="$lib" PYTHONPATH="$src/python" PYTHONDONTWRITEBYTECODE=1
cd "$src/python/tests"
if [ "${4:-}" = --data ]; then
  absent=0
  for f in cacm.tar.gz topics.cacm.txt; do
    if [ ! -f "$5/cacm/$f" ]; then
      echo "SKIP: $5/cacm/$f is absent"
      absent=1
    fi
  done
  [ $absent = 0 ] || exit 77
  CLS_DATA_DIR="$5" exec "$py" -m unittest -v data_cacm
fi
exec "$py" -m unittest discover -v -p 'test_*.py'
