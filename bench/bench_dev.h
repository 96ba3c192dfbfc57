/* Helpers of the kernel-alone suites (intersect, score), apart from bench.h because they need
 * the OpenCL types and the library's internals (src/clx.h). */
#ifndef CLS_BENCH_DEV_H
#define CLS_BENCH_DEV_H

#include <stdint.h>

#include "clx_scan.h"

/* bench_dev.c: splitmix64; uniform in [0, n); a comma list of
 * whole numbers (1000 or 1e3) within [lo, hi] into v, the count or 0 if malformed; device
 * buffers: made (at least 4 bytes), written at off (adding the write's device time to *secs
 * when secs is given), [0, one) copied over [one, copies x one) by doubling, filled. */
uint64_t bench_rand(uint64_t *st);
uint32_t bench_below(uint64_t *st, uint32_t n);
unsigned bench_parse_list(const char *arg, double lo, double hi, uint32_t *v, unsigned max);
cls_status bench_buf(const clx_queue *q, cl_mem_flags flags, uint64_t bytes, cl_mem *out);
cls_status bench_write(const clx_queue *q, cl_mem buf, uint64_t off, uint64_t bytes, const void *host, double *secs);
cls_status bench_replicate(const clx_queue *q, cl_mem buf, uint64_t one, unsigned copies);
cls_status bench_fill(const clx_queue *q, cl_mem buf, cl_uint pattern, uint64_t bytes);

#endif
