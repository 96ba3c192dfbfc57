#!/bin/sh
# The library boundary: libclsearch.so exports the functions include/clsearch.h declares with
# CLS_API and nothing else (the library builds with hidden visibility). Fails, naming them, on
# a symbol exported without being declared so (an internal, protobuf-c's ciff__*, a table), on a
# CLS_API function the library does not export, and on a function declared in the header
# without CLS_API (which hidden visibility would silently keep out of the library).
#   symbols.sh NM LIBRARY HEADER
set -eu
nm=$1 lib=$2 header=$3
if ! command -v "$nm" >/dev/null 2>&1; then
  echo "symbols: no nm ('$nm'): skipped"
  exit 77
fi

# The toolchain's own symbols, allowed whatever they are: the ones GNU ld and gold put in the
# dynamic symbol table of every shared object they link, whatever its code says. _init and _fini
# (crti.o and crtn.o: the .init and .fini entry points) and _edata, _end and __bss_start (the
# linker's section boundaries; __bss_start__, __bss_end__, _bss_end__ and __end__ on ARM).
# Older GNU ld and gold export them; the binutils 2.40 here keeps them all local. Nothing else is
# allowed: a sanitizer or another toolchain exporting something new is to be looked at (the
# ASan + UBSan build exports exactly the same set as the plain one).
toolchain='_init _fini _edata _end __bss_start __bss_start__ __bss_end__ _bss_end__ __end__'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Exported: defined dynamic symbols (name@@VERSION would carry a version: keep the name).
"$nm" -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/exported"
# Declared: the header's CLS_API lines, each starting one declaration ("CLS_API type name(").
grep -E '^CLS_API ' "$header" | sed -E 's/^([^(]*[^A-Za-z0-9_])?(cls_[A-Za-z0-9_]+)[[:space:]]*\(.*/\2/' \
  | grep -E '^cls_[A-Za-z0-9_]+$' | sort -u >"$tmp/declared"
# Function declarations in the header without CLS_API: a line that starts a declaration (not a
# typedef, comment, preprocessor line or continuation) and names cls_...( .
grep -nE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]cls_[A-Za-z0-9_]+[[:space:]]*\(' "$header" \
  | grep -vE '^[0-9]+:(CLS_API |typedef )' >"$tmp/unmarked" || true
for s in $toolchain; do echo "$s"; done | sort -u >"$tmp/toolchain"

if [ ! -s "$tmp/declared" ]; then
  echo "symbols: no CLS_API declaration found in $header"
  exit 1
fi

sort -u "$tmp/declared" "$tmp/toolchain" >"$tmp/allowed"
comm -23 "$tmp/exported" "$tmp/allowed" >"$tmp/extra"
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/missing"
kept=$(comm -12 "$tmp/exported" "$tmp/toolchain" | tr '\n' ' ')

fail=0
if [ -s "$tmp/extra" ]; then
  echo "symbols: $lib exports $(wc -l <"$tmp/extra") symbol(s) that $header does not declare with CLS_API:"
  sed 's/^/  /' "$tmp/extra"
  fail=1
fi
if [ -s "$tmp/missing" ]; then
  echo "symbols: $header declares with CLS_API, but $lib does not export:"
  sed 's/^/  /' "$tmp/missing"
  fail=1
fi
if [ -s "$tmp/unmarked" ]; then
  echo "symbols: $header declares without CLS_API (hidden in the library):"
  sed 's/^/  line /' "$tmp/unmarked"
  fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "symbols: $lib exports $(wc -l <"$tmp/exported") symbols: the $(wc -l <"$tmp/declared") functions of" \
     "$(basename "$header")${kept:+, and the toolchain's $kept}"
