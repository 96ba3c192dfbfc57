/* Kernel programs compiled in a child process.
 *
 * An OpenCL compiler can die rather than fail: POCL 5.0's work-group loop formation asserted,
 * and aborted the process, on a kernel whose barriers it could not place; LLVM aborts when its
 * memory runs out. In-process that ends the caller (a server, a Python session, a search that
 * had asked for a GPU too). So a program that is not in the binary cache is compiled by a small
 * helper, clsearch-compile, started for the one build: a crash there becomes CLS_E_BUILD naming
 * the device, the program, the signal and the compiler's last words, and the caller goes on.
 * The parent then loads the helper's binary, as it loads a cached one; on POCL, which compiles
 * a kernel at its first launch and caches it itself, the helper's build of every kernel is the
 * check that POCL's compiler takes them, done once a program and device (clx_program.c).
 *
 * The helper is looked for in $CLSEARCH_COMPILER ("none": compile in this process), beside the
 * library (or the program it is linked into) and in ../libexec/clsearch/ from there, then at the
 * installed path and at the build tree's, both fixed when the library was built. Where none is
 * found the program is compiled in this process, and the engine's description says so. */
#ifndef CLS_CLX_COMPILE_H
#define CLS_CLX_COMPILE_H

#include <stddef.h>

#include "device/clx.h"

/* Where the helper is (1), or 0 when there is none: compile in this process. */
int clx_compiler_path(char *out, size_t len);

/* Compiles src with options for dev in the helper at `helper`, every kernel of it; on success *bin
 * (malloc) holds the program binary. CLS_E_NODEVICE: the helper could not open the device (the
 * caller may compile itself); CLS_E_BUILD: the build failed, or the compiler crashed. what names
 * the program in messages ("kernel program of decode.cl, ..."). */
cls_status clx_compile_isolated(const char *helper, const clx_device *dev, const char *what, const char *src,
                                size_t src_len, const char *options, unsigned char **bin, size_t *bin_len);

/* Builds src for dev in ctx in this process (clx_program.c): the empty-log retry, the build fault,
 * a failure's message with the build log. What the helper runs, and the fallback without it. */
cls_status clx_build_source(cl_context ctx, const clx_device *dev, const char *src, size_t len, const char *options,
                            cl_program *out);

/* The helper's main (tools/clsearch-compile.c): argv as clx_compile_isolated passes it. */
int clx_compile_main(int argc, char **argv);

#endif
