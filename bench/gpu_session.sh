#!/usr/bin/env bash
# One session on a GPU host, everything in one go: build, list devices, run the kernel tests
# on the GPU (every kernel against the plain-C reference, CACM and the generated collection
# included) and the whole suite on POCL, then the quick start and the end-to-end benchmark.
# Logs go to $OUT (or ./gpu-out). Dependencies must already be there (CLSEARCH_NO_DEPS=1).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export CLSEARCH_NO_DEPS=1 CTEST_OUTPUT_ON_FAILURE=1
{
  echo "== host: $(uname -n) $(date -u +%Y-%m-%dT%H:%MZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo "${CLSEARCH_COMMIT:-?}")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  rm -rf build # build outputs left from an earlier copy may look newer than the sources
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CLS_DATA_DIR:+-DCLSEARCH_DATA_DIR=$CLS_DATA_DIR} >/dev/null && cmake --build build -j"$(nproc)" 2>&1 | grep -E "error|warning" 
  build/clsearch devices
  echo "== kernel tests on the GPU"
  (cd build && CLS_TEST_DEVICE=gpu ctest -R test_kernels --output-on-failure)
  echo "== every test on POCL (cacm_map needs PyPI, not here)"
  (cd build && ctest -E cacm_map -j4)
  echo "== quick start"
  tools/quickstart.sh
  echo "== benchmark"
  bench/run.sh build "$(build/clsearch devices | sed -n 's/^  device \([0-9]*:[0-9]*\) .*/\1/p' | paste -sd, -)" 5
} 2>&1 | tee "$out/gpu_session.log"
cp build/bench/qps.jsonl "$out/" 2>/dev/null || true
