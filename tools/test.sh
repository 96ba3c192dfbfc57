#!/usr/bin/env bash
# The whole test suite on POCL: install what is missing, then build and run every test twice,
# once as released (warnings are errors) and once under AddressSanitizer and
# UndefinedBehaviorSanitizer; then the concurrency suite under ThreadSanitizer. Tests needing
# ../shared/data skip, naming the path, without it.
# Each build folder is configured with every option the suite needs, whatever configured it
# before (tools/quickstart.sh shares build/), and ctest fails when it finds no test.
#   tools/test.sh [--no-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
[ "${1:-}" = --no-sanitize ] && sanitize=0
# clang-15, llvm-spirv-15 and spirv-tools: the amdgpu_check test (tools/amdgpu-check.sh) compiles
# the kernels for AMD GPUs and to SPIR-V, and validates the SPIR-V; the library needs none of them.
tools/deps.sh clang-15 llvm-spirv-15 spirv-tools
jobs=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1

echo "== build and test (RelWithDebInfo, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_WERROR=ON -DCLSEARCH_TESTS=ON \
  -DCLSEARCH_CIFF=ON -DCLSEARCH_SANITIZE=OFF >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --no-tests=error)

# A few seconds of every fuzz harness (clang, ASan+UBSan, build-fuzz/): a reader that crashes on
# what a short run finds fails CI; the long campaigns are docs/FUZZING.md's.
echo "== fuzz each harness briefly"
tools/fuzz.sh 2

if [ $sanitize = 1 ]; then
  echo "== build and test under ASan + UBSan"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCLSEARCH_SANITIZE=ON -DCLSEARCH_WERROR=ON \
    -DCLSEARCH_TESTS=ON -DCLSEARCH_CIFF=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  # POCL and LLVM keep allocations for the life of the process; leaks are reported for our
  # code only (tests/lsan.supp names the OpenCL runtime's libraries).
  # intercept_tls_get_addr=0: GCC 12's sanitizer runtime can take a dynamic TLS block for one with
  # a glibc 2.19 header (an address coincidence; google/sanitizers#1322) and its leak check then
  # crashes scanning a bogus range ("Tracer caught signal 11"); with libmicrohttpd's gnutls loaded,
  # POCL's kernel compile hits it every time. Dynamic TLS goes unscanned instead.
  # use_sigaltstack=0: a thread that compiles kernels (test_concurrency's threads each creating an
  # engine) gets LLVM's own alternate signal stack, malloc'd by llvm::sys::RemoveFileOnSignal in
  # place of ASan's, and ASan's unmapping of "its" stack at that thread's exit then fails ("failed
  # to deallocate", exit 1). Without its alternate stack ASan only reports a stack overflow less
  # well.
  export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:intercept_tls_get_addr=0:use_sigaltstack=0
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd build-asan && ctest -j"$jobs" --no-tests=error -E install)

  # The concurrency suite alone under ThreadSanitizer (build-tsan): threads sharing an engine,
  # threads each with an engine on one index, processes sharing the program cache. Only that
  # suite, so the stage stays short; a race report fails it (exit 66) even when results agree.
  echo "== the concurrency tests under ThreadSanitizer"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_TSAN=ON -DCLSEARCH_SANITIZE=OFF \
    -DCLSEARCH_WERROR=ON -DCLSEARCH_TESTS=ON -DCLSEARCH_CIFF=ON >/dev/null
  cmake --build build-tsan -j"$jobs" --target test_concurrency clsearch
  (cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --no-tests=error -R '^test_concurrency$')
fi
