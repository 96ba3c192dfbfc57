#!/bin/sh
# The kernels only the benchmarks run (bench/cl: score_and, the device-wide scan, the copy), on
# POCL at small sizes: each suite checks its device results against plain C and exits non-zero
# on a mismatch, so this is their comparison with the reference. Times are not looked at.
#   bench_kernels.sh CLSEARCH
set -eu
cls=$1
"$cls" bench score -d cpu --mode and,or --cands 1e4 --lists 1e4 --batch 64 --wg 64 -r 1 >/dev/null
"$cls" bench scan -d cpu --log2 16 --algo hs,we -r 1 >/dev/null
"$cls" bench copy -d cpu --mib 4 -r 1 >/dev/null
echo "bench kernels on POCL: score (and, or), scan, copy checked against plain C"
