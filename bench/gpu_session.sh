#!/usr/bin/env bash
# One session on a GPU host, everything in one go: build, list devices, run the kernel tests
# on the GPU (every kernel and every codec's decoder against the plain-C reference, CACM and
# the generated collection included), the decode benchmark (every codec, DECODE_DOCS generated
# documents, default 2,000,000) and the end-to-end benchmark; with FULL=1 also the whole suite
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
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_CIFF=OFF ${CLS_DATA_DIR:+-DCLSEARCH_DATA_DIR=$CLS_DATA_DIR} >/dev/null && cmake --build build -j"$(nproc)" 2>&1 | grep -E "error|warning" 
  build/clsearch devices
  echo "== kernel tests on the GPU"
  (cd build && CLS_TEST_DEVICE=gpu CLS_TEST_FULL=1 ctest -R test_kernels --output-on-failure)
  devs=$(build/clsearch devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p' | paste -sd, -)
  echo "== decode benchmark"
  bench/decode.sh build "$devs" "${DECODE_DOCS:-2000000}" 10
  echo "== end-to-end benchmark"
  bench/run.sh build "$devs" 5
  if [ "${FULL:-0}" = 1 ]; then
    echo "== every test on POCL (cacm_map and effectiveness need PyPI, not here)"
    (cd build && ctest -E 'cacm_map|effectiveness' -j4)
    echo "== quick start"
    tools/quickstart.sh
  fi
} 2>&1 | tee "$out/gpu_session.log"
cp build/bench/qps.jsonl build/bench/decode.jsonl "$out/" 2>/dev/null || true
