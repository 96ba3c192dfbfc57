#!/bin/sh
# cmake --install into a temporary prefix, then build a consumer with find_package(clsearch)
# (shared and static) and others with pkg-config (shared, and static with --static), and run them.
set -eu
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/install" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prefix/consumer/consumer"
"$prefix/consumer/consumer_static"
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1)
unset PKG_CONFIG_SYSROOT_DIR # a build host's sysroot setting must not prefix our prefix
export PKG_CONFIG_PATH="$libdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
cc -o "$prefix/pc_consumer" "$src/tests/install/main.c" $(pkg-config --cflags --libs clsearch)
LD_LIBRARY_PATH="$(dirname "$libdir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prefix/pc_consumer"
# pkg-config --static: libclsearch.a and what it needs, libarchive's own libraries among them
# (tools/deps.sh installs them). The program runs without LD_LIBRARY_PATH: no libclsearch.so.
libs=$(pkg-config --static --libs clsearch)
# shellcheck disable=SC2046
cc -o "$prefix/pc_consumer_static" "$src/tests/install/main.c" $(pkg-config --cflags clsearch) \
  $(echo "$libs" | sed 's/-lclsearch\( \|$\)/-l:libclsearch.a\1/')
"$prefix/pc_consumer_static"
echo "install: find_package (shared, static) and pkg-config (shared, --static) consumers built and ran"
