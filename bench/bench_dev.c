/* What the kernel-alone suites (intersect, score) share: a seeded generator, number lists on
 * the command line, and device buffers made, written, replicated and filled with every call
 * checked (bench.h). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "bench.h"
#include "bench_dev.h"
#include "clx_scan.h"
#include "util/err.h"

uint64_t bench_rand(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t bench_below(uint64_t *st, uint32_t n) { return (uint32_t)(((bench_rand(st) >> 32) * n) >> 32); }

unsigned bench_parse_list(const char *arg, double lo, double hi, uint32_t *v, unsigned max)
{
    unsigned n = 0;
    for (const char *p = arg;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !(x >= lo && x <= hi) || x != (double)(uint32_t)x || n == max) return 0;
        v[n++] = (uint32_t)x;
        if (*end == '\0') return n;
        if (*end != ',') return 0;
        p = end + 1;
    }
}

cls_status bench_buf(const clx_queue *q, cl_mem_flags flags, uint64_t bytes, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(q->ctx, flags, (size_t)(bytes ? bytes : 4), NULL, &err);
    if (!*out || err != CL_SUCCESS) return err_wrap(clx_fail("clCreateBuffer", err), "%.0f MiB: ", bytes / 1048576.0);
    return CLS_OK;
}

cls_status bench_write(const clx_queue *q, cl_mem buf, uint64_t off, uint64_t bytes, const void *host, double *secs)
{
    cl_event ev;
    CLX_TRY(clEnqueueWriteBuffer(q->q, buf, CL_TRUE, (size_t)off, (size_t)bytes, host, 0, NULL, &ev));
    if (secs) *secs += clx_event_span(ev, ev);
    clReleaseEvent(ev);
    return CLS_OK;
}

cls_status bench_replicate(const clx_queue *q, cl_mem buf, uint64_t one, unsigned copies)
{
    for (uint64_t have = 1; have < copies;) {
        uint64_t n = have < copies - have ? have : copies - have;
        CLX_TRY(clEnqueueCopyBuffer(q->q, buf, buf, 0, (size_t)(have * one), (size_t)(n * one), 0, NULL, NULL));
        have += n;
    }
    CLX_TRY(clFinish(q->q));
    return CLS_OK;
}

cls_status bench_fill(const clx_queue *q, cl_mem buf, cl_uint pattern, uint64_t bytes)
{
    CLX_TRY(clEnqueueFillBuffer(q->q, buf, &pattern, sizeof pattern, 0, (size_t)bytes, 0, NULL, NULL));
    return CLS_OK;
}
