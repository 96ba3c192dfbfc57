/* The benchmarks' own device plumbing: a profiling queue on one device, the device-wide scan
 * (bench/cl/scan.cl) and the table of the bench-only kernel sources (bench/cl, embedded). Not
 * part of the library: the engine never builds these kernels. */
#ifndef CLS_BENCH_CLX_SCAN_H
#define CLS_BENCH_CLX_SCAN_H

#include "device/clx.h"

/* The sources in bench/cl, embedded at build time (bench/CMakeLists.txt); for clx_build_ex. */
extern const clx_source bench_kernels[];

/* ---- A profiling queue on one device, for the benchmark-only kernels and their tests ----- */

typedef struct clx_queue {
    clx_device dev;
    cl_context ctx;
    cl_command_queue q;
} clx_queue;

/* Selects the device named by spec and makes a context and a profiling queue on it. */
cls_status clx_queue_open(const char *spec, clx_queue *out);
void clx_queue_close(clx_queue *q);

/* ---- Device-wide prefix sum (bench/cl/scan.cl), host side (clx_scan.c) -------------------------- */

typedef struct clx_scan clx_scan;

/* The two ways bench/cl/scan.cl scans a device's worth of elements. */
typedef enum clx_scan_method {
    CLX_SCAN_LOOKBACK = 0, /* one pass, decoupled look-back: 8 bytes an element */
    CLX_SCAN_3PASS = 1     /* reduce-then-scan, level by level: 16 bytes an element */
} clx_scan_method;

/* Builds scan.cl for q's device: wg work-items a group (a power of two), items elements a
 * work-item, algo the in-group scan (WG_SCAN_ALGO: 0 Hillis-Steele, 1 work-efficient, 2 NVIDIA
 * warp shuffles, at least 32 work-items a group), method the device-wide scheme. */
cls_status clx_scan_create(const clx_queue *q, unsigned wg, unsigned items, int algo, clx_scan_method method,
                           clx_scan **out);
/* Inclusive scan (uint32, wrapping) of in[0..n) into out: the input is uploaded, the whole scan
 * runs once untimed and reps times timed (times[r]: first kernel's start to last one's end),
 * and the result is read back. */
cls_status clx_scan_run(clx_scan *s, const uint32_t *in, uint32_t n, unsigned reps, double *times, uint32_t *out);
void clx_scan_free(clx_scan *s);

#endif
