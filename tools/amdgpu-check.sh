#!/usr/bin/env bash
# Compiles every kernel program, in every variant the parameter database and `clsearch tune` can
# select on an AMD GPU, with no AMD hardware: through clang's AMDGPU backend for gfx90a (CDNA2,
# MI200) and gfx1100 (RDNA3), and to SPIR-V 1.0 (clang, then llvm-spirv) for the other drivers
# that take it, each module checked by spirv-val. A kernel that does not compile there would fail
# on the first AMD machine it met; a module the validator refuses, on a driver that reads SPIR-V.
#   tools/amdgpu-check.sh [KERNEL_VARIANTS [WORKDIR]]
# KERNEL_VARIANTS: the tests' kernel_variants program (default build/tests/kernel_variants), which
# first checks that the NVIDIA-only WG_SCAN_ALGO=2 is never selected on AMD, then writes each
# variant's source exactly as the library assembles it, with its build options (which variants:
# tests/kernel_variants.c). clang 15, not Debian 12's default 14: 14 has no gfx1100.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
variants=${1:-$root/build/tests/kernel_variants}
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
"$root/tools/deps.sh" clang-15 llvm-spirv-15 spirv-tools
clang="clang-15"
spirv="llvm-spirv-15"
spirv_val="spirv-val"
[ -x "$variants" ] || { echo "amdgpu-check: no $variants (build the tests: cmake -DCLSEARCH_TESTS=ON)" >&2; exit 1; }

rm -rf "$work/src" "$work/out"
mkdir -p "$work/src" "$work/out"
"$variants" "$work/src"

# One compilation: target and program; its log goes to out/, and a failure prints it.
# -Xclang -finclude-default-header: the OpenCL C builtins, as a driver's compiler provides them.
# -nogpulib: no ROCm device library here; the kernels call only builtins clang lowers itself.
# SPIR-V gets the front end's output unoptimized (-disable-llvm-passes), as drivers expect to
# optimize it themselves; LLVM's passes can also form integer types SPIR-V has no word for.
# SPIR-V 1.0: the version every OpenCL driver that reads SPIR-V takes (llvm-spirv writes 1.4 unless
# told), and the one spirv-val's OpenCL environments hold a module to.
# spirv-val checks each module under the rules of an OpenCL 1.2 full profile consumer (SPIR-V's
# own, and the capabilities that profile allows). The benchmarks' look-back scan is the
# exception: it needs cl_khr_int64_base_atomics, whose Int64Atomics capability no OpenCL
# environment of the validator admits, so its modules get the rules of SPIR-V 1.0 alone.
# -fgnu89-inline (SPIR-V only): the kernels' helpers are plain `inline`, which OpenCL C (C99) makes
# an inline definition with no external one. Unoptimized, clang keeps their bodies as
# available_externally and llvm-spirv writes them as function definitions with Import linkage, a
# module spirv-val refuses; GNU89 semantics give each helper the one ordinary definition a
# consumer needs. The kernels keep plain `inline`: as `static inline`, POCL 3.1 crashed or
# decoded wrong frequencies in the PForDelta, OptPFD and Rice decoders, whose helpers hold a
# barrier (test_kernels' decode cases). Drivers compile the source optimized, and inline them.
compile() {
  local target=$1 name=$2 opts=$3 base=$work/out/$1-${2%.cl}
  local common=(-x cl -Xclang -finclude-default-header -Werror=implicit-function-declaration)
  local env=opencl1.2
  case $name in *-scan.cl) env=spv1.0 ;; esac
  # shellcheck disable=SC2086
  case $target in
    gfx*) $clang "${common[@]}" $opts -target amdgcn-amd-amdhsa -mcpu="$target" -nogpulib -c \
            -o "$base.o" "$work/src/$name" >"$base.log" 2>&1 ;;
    spirv) $clang "${common[@]}" -fgnu89-inline $opts -target spir64 -Xclang -disable-llvm-passes \
             -emit-llvm -c -o "$base.bc" "$work/src/$name" >"$base.log" 2>&1 &&
           $spirv --spirv-max-version=1.0 "$base.bc" -o "$base.spv" >>"$base.log" 2>&1 &&
           { $spirv_val --target-env "$env" "$base.spv" >>"$base.log" 2>&1 ||
             { rm -f "$base.spv"; echo "spirv-val --target-env $env refused $base.spv" >>"$base.log"; false; }; } ;;
  esac || { echo "FAIL $target $name ($opts)"; cat "$base.log"; return 1; }
}
export -f compile
export clang spirv spirv_val work

targets="gfx90a gfx1100 spirv"
n=$(wc -l <"$work/src/variants.txt")
fails=0
for t in $targets; do
  # two at a time: the machine's cores are shared
  if ! while IFS=$'\t' read -r name opts; do printf '%s\0%s\0%s\0' "$t" "$name" "$opts"; done \
      <"$work/src/variants.txt" | xargs -0 -n3 -P2 bash -c 'compile "$@"' _; then
    fails=1
  fi
  ok=$(find "$work/out" -name "$t-*.$([ "$t" = spirv ] && echo spv || echo o)" -size +0 | wc -l)
  echo "$t: $ok of $n programs compiled$([ "$t" = spirv ] && echo ", each valid by spirv-val")"
  [ "$ok" = "$n" ] || fails=1
done
if [ $fails != 0 ]; then
  trap - EXIT # the sources and logs stay for a look
  echo "amdgpu-check: FAILED (sources and logs in $work)"
  exit 1
fi
echo "amdgpu-check: all $n variants compile for $targets ($((n * 3)) compilations; every SPIR-V module valid)"
