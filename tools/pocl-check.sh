#!/usr/bin/env bash
# The kernels against a second POCL: Ubuntu 24.04's POCL 5.0 (LLVM 16), beside the Debian 12
# POCL 3.1 (LLVM 15) that tools/test.sh uses. In a minimal Ubuntu 24.04 root (debootstrap) with
# its POCL and this tree's build dependencies, a clean copy of the tree (its last commit) is
# built, then:
#  1. every program variant the parameters can select (tests/kernel_variants) is compiled on the
#     POCL device with every kernel of it (tests/kernel_build, each in the compiler process);
#  2. the device comparisons run there: test_kernels, test_query, test_index (the device's check
#     of forged indexes among them), test_concurrency, test_cli, test_serve, bench_kernels and
#     fault, and the *_data cases where ../shared is beside the tree.
#   tools/pocl-check.sh [WORKDIR]     in the Ubuntu root (root, debootstrap; default build-pocl/)
#   tools/pocl-check.sh --here        on this machine as it is (the GPU host is Ubuntu 24.04), in
#                                     build-pocl/ of the tree, on the first CPU device
# Prints the POCL it ran on and each step's result; exit 0 when all passed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
tests='^(test_kernels|test_query|test_index|test_concurrency|test_cli|test_serve|bench_kernels|fault)(_data)?$'

check_here() { # BUILD_DIR: configure, build, compile every variant, run the device tests
  local build=$1 t0=$SECONDS
  # shellcheck disable=SC2086 # POCL_CHECK_CMAKE: options of a host that lacks a dependency
  # (the GPU image has no protobuf-c: -DCLSEARCH_CIFF=OFF)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSEARCH_TESTS=ON -DCLSEARCH_CIFF=ON \
    -DCLSEARCH_SANITIZE=OFF -DCLSEARCH_WERROR=ON ${POCL_CHECK_CMAKE:-} >"$build.cmake.log" 2>&1 ||
    { cat "$build.cmake.log"; return 1; }
  cmake --build "$build" -j"$(nproc)" >"$build.build.log" 2>&1 || { tail -30 "$build.build.log"; return 1; }
  echo "== the OpenCL devices"
  "$build/clsearch" devices | sed 's/^/   /'
  echo "== every program variant, every kernel of it, on the CPU device (kernel_build)  [$((SECONDS - t0)) s]"
  rm -rf "$build/variants"
  mkdir -p "$build/variants"
  "$build/tests/kernel_variants" "$build/variants" | sed 's/^/   /'
  local rc=0
  "$build/tests/kernel_build" -j "$(nproc)" "$build/variants" cpu | sed 's/^/   /' || rc=1
  echo "== the device tests ($tests)  [$((SECONDS - t0)) s]"
  (cd "$build" && CTEST_OUTPUT_ON_FAILURE=1 ctest -j"$(nproc)" --no-tests=error -R "$tests") | sed 's/^/   /' || rc=1
  echo "== pocl-check: $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0)) s"
  return $rc
}

if [ "${1:-}" = --here ]; then
  check_here build-pocl
  exit $?
fi
if [ "${1:-}" = --inside ]; then # in the Ubuntu root, from below
  check_here build
  exit $?
fi

work=${1:-$src/build-pocl}
mirror=${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
[ "$(id -u)" = 0 ] || { echo "pocl-check: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null || tools/deps.sh debootstrap
mkdir -p "$work"
work=$(cd "$work" && pwd)
root=$work/noble
# Ubuntu's packages under the names tools/deps.sh gives Debian's (libsubunit-dev and check are
# Check and its runner; python3 for the tests' helpers)
pkgs="gcc g++ make cmake pkg-config ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo libcjson-dev
      libarchive-dev libxxhash-dev libstemmer-dev libprotobuf-c-dev protobuf-c-compiler nettle-dev libacl1-dev
      liblzma-dev libzstd-dev liblz4-dev libbz2-dev zlib1g-dev libxml2-dev libmicrohttpd-dev check libsubunit-dev
      python3 ca-certificates"
cleanup() {
  for m in dev/pts dev proc sys; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  return 0
}
trap cleanup EXIT
if [ ! -x "$root/usr/bin/cmake" ]; then
  echo "== debootstrap: Ubuntu 24.04 (noble), minbase, from $mirror, with POCL and the build dependencies"
  rm -rf "$root"
  # Debian's debootstrap may predate noble: Ubuntu's suites share the gutsy script
  script=/usr/share/debootstrap/scripts/noble
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/gutsy
  debootstrap --variant=minbase --no-check-gpg noble "$root" "$mirror" "$script" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  printf 'deb %s noble main universe\ndeb %s noble-updates main universe\n' "$mirror" "$mirror" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  # shellcheck disable=SC2086
  chroot "$root" /bin/sh -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends $pkgs" >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; exit 1; }
  umount "$root/proc"
fi
rm -rf "$root/root/clsearch" "$root/root/shared"
mkdir -p "$root/root/clsearch"
git archive --format=tar HEAD | tar -C "$root/root/clsearch" -x
[ -d ../shared ] && mkdir -p "$root/root/shared" && cp -rL ../shared/. "$root/root/shared/"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
echo "== Ubuntu 24.04 root $root, the tree at $(git rev-parse --short HEAD)"
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c "cd /root/clsearch && tools/pocl-check.sh --inside"
