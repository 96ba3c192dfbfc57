#!/usr/bin/env bash
# One session on a GPU host, everything in one go: build, list devices, run the kernel tests
# on the GPU (every kernel and every codec's decoder against the plain-C reference, CACM and
# the generated collection included), every benchmark suite and peer through bench/all.sh (its
# SKIP variable leaves suites out); the runs of four collections in every codec, identical on
# the GPU and the reference engine; with LARGE_DEB=path/to/linux-doc-6.1.deb the index build throughput at 1 to 16
# threads on that package's documentation tree; with FULL=1 also the whole suite
# on POCL and the quick start. Logs go to $OUT (or ./gpu-out). Dependencies must already be
# there (CLSEARCH_NO_DEPS=1); CIFF support is left out (no protobuf-c on the GPU image).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export CLSEARCH_NO_DEPS=1 CTEST_OUTPUT_ON_FAILURE=1
{
  echo "== host: $(uname -n) $(date -u +%Y-%m-%dT%H:%MZ) commit ${CLSEARCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "?")}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  rm -rf build # build outputs left from an earlier copy may look newer than the sources
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_CIFF=OFF -DCLSEARCH_SERVE=OFF ${CLS_DATA_DIR:+-DCLSEARCH_DATA_DIR=$CLS_DATA_DIR} >/dev/null && cmake --build build -j"$(nproc)" 2>&1 | grep -E "error|warning" 
  build/clsearch devices
  echo "== kernel tests on the GPU"
  (cd build && CLS_TEST_DEVICE=gpu CLS_TEST_FULL=1 ctest -R test_kernels --output-on-failure)
  echo "== runs identical across codecs and engines, on the GPU (MAP needs PyPI: not here)"
  CLS_EFF_NO_EVAL=1 sh tests/effectiveness.sh build/clsearch . "${CLS_DATA_DIR:-../shared/data}" build/test-tmp gpu
  if [ -n "${LARGE_DEB:-}" ]; then
    echo "== index build throughput on $(basename "$LARGE_DEB")"
    rm -rf /tmp/large && dpkg -x "$LARGE_DEB" /tmp/large
    for t in 1 2 4 8 16; do build/clsearch index -v -c files --threads $t -o /tmp/large.$t.idx /tmp/large/usr/share/doc 2>&1 | grep indexed; done
    cmp /tmp/large.1.idx /tmp/large.16.idx && echo "1 and 16 threads: identical index files"
  fi
  echo "== every benchmark suite and peer (bench/all.sh; SKIP=\"suite ...\" leaves some out)"
  bench/all.sh build gpu gpu "$out/all"
  if [ "${FULL:-0}" = 1 ]; then
    echo "== every test on POCL (cacm_map and effectiveness need PyPI, not here)"
    (cd build && ctest -E 'cacm_map|effectiveness' -j4)
    echo "== quick start"
    tools/quickstart.sh
  fi
} 2>&1 | tee "$out/gpu_session.log"
