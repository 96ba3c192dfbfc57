#!/bin/sh
# Installs the Debian packages clsearch builds, tests and runs with, where any is missing.
# Debian 12 as root: apt-get; otherwise it names what is missing and stops.
# Arguments name further packages wanted beside these (bench/peers.sh: libxapian-dev g++).
set -eu
# Machines without a package registry (a prepared GPU host) set CLSEARCH_NO_DEPS=1.
[ "${CLSEARCH_NO_DEPS:-0}" = 1 ] && exit 0
# g++: the library's one C++ file (src/device/clx_guard.cpp). curl: the README's request to the
# server. python3-venv: the quickstart's venv for the bindings (Debian 12's python3 refuses a
# system-wide pip install). The last line: python3-wheel-whl lets `pip install ./python` build
# offline (with python3-setuptools-whl, which python3-venv brings); python3-pandas for the
# bindings' DataFrames.
# libmicrohttpd-dev: the query server (serve/); a host without it configures -DCLSEARCH_SERVE=OFF.
# The second line after libarchive-dev: the libraries libarchive.pc names in Libs.private, which
# `pkg-config --static --libs clsearch` hands on, so that a program can link libclsearch.a.
pkgs="gcc g++ make cmake pkg-config ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
      libcjson-dev libarchive-dev libxxhash-dev libstemmer-dev libprotobuf-c-dev protobuf-c-compiler
      nettle-dev libacl1-dev liblzma-dev libzstd-dev liblz4-dev libbz2-dev zlib1g-dev libxml2-dev
      libmicrohttpd-dev check libsubunit-dev
      python3 python3-venv ca-certificates curl
      python3-wheel-whl python3-pandas $*"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "clsearch needs these Debian packages:$missing" >&2
  echo "install them (as root: apt-get install$missing) and run again" >&2
  exit 1
fi
echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
