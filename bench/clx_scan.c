/* Host side of the device-wide prefix sum (cl/scan.cl) and of the profiling queue the
 * benchmark-only kernels run on; shared by `clsearch bench` and tests/test_kernels.c, which
 * checks the scan against a plain host loop on POCL.
 *
 * CLX_SCAN_LOOKBACK is one scan_lookback over the input: a 64-bit state word per tile and a
 * ticket counter, zeroed once per clx_scan_run (untimed); runs after that differ by their run
 * number and first ticket (scan.cl), so a timed run is that one kernel and nothing else.
 * CLX_SCAN_3PASS is reduce-then-scan: scan_tiles over the input writes each tile's scan and its
 * total; the totals are scanned the same way, level by level, until one tile holds them; then
 * scan_add walks back down, adding to every tile the inclusive sum of the tiles before it. */
#include <stdio.h>
#include <stdlib.h>

#include "clx_scan.h"
#include "device/clx_guard.h"
#include "util/err.h"

#define MAX_LEVELS 8

cls_status clx_queue_open(const char *spec, clx_queue *out)
{
    out->ctx = NULL;
    out->q = NULL;
    cls_status s = clx_select(spec, &out->dev);
    if (s != CLS_OK) return s;
    cl_int err;
    out->ctx = clx_create_context(out->dev.device, &err); /* POCL may throw: clx_guard.cpp */
    if (!out->ctx || err != CL_SUCCESS) return clx_fail("clCreateContext", err);
    out->q = clCreateCommandQueue(out->ctx, out->dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!out->q || err != CL_SUCCESS) {
        clReleaseContext(out->ctx);
        out->ctx = NULL;
        return clx_fail("clCreateCommandQueue", err);
    }
    return CLS_OK;
}

void clx_queue_close(clx_queue *q)
{
    if (q->q) clReleaseCommandQueue(q->q);
    if (q->ctx) clReleaseContext(q->ctx);
    q->q = NULL;
    q->ctx = NULL;
}

struct clx_scan {
    const clx_queue *q;
    cl_program prog;
    cl_kernel tiles, add, lookback;
    size_t wg, tile;
    clx_scan_method method;
};

cls_status clx_scan_create(const clx_queue *q, unsigned wg, unsigned items, int algo, clx_scan_method method,
                           clx_scan **out)
{
    *out = NULL;
    if (method != CLX_SCAN_LOOKBACK && method != CLX_SCAN_3PASS)
        return err_set(CLS_E_ARG, "scan: method %d (0 look-back, 1 three passes)", (int)method);
    if (wg < 2 || wg > q->dev.info.max_work_group || (wg & (wg - 1)) || items < 1 || items > 64 || algo < 0 || algo > 2 || (algo == 2 && wg < 32))
        return err_set(CLS_E_ARG, "scan: work-group %u (a power of two the device allows), %u items (1..64), "
                                  "algorithm %d (0, 1 or 2; 2 needs at least 32)", wg, items, algo);
    clx_scan *s = calloc(1, sizeof *s);
    if (!s) return err_set(CLS_E_NOMEM, "out of memory");
    s->q = q;
    s->wg = wg;
    s->tile = (size_t)wg * items;
    s->method = method;
    char opts[128], note[4400];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSCAN_WG=%u -DSCAN_ITEMS=%u -DWG_SCAN_ALGO=%d", wg, items, algo);
    static const char *const files[] = {"scan.cl", NULL};
    double secs;
    int cached;
    cl_int err = CL_SUCCESS;
    cls_status st = clx_build_ex(q->ctx, &q->dev, bench_kernels, files, opts, &s->prog, &secs, &cached, note, sizeof note);
    if (st == CLS_OK) {
        s->tiles = clCreateKernel(s->prog, "scan_tiles", &err);
        if (err == CL_SUCCESS) s->add = clCreateKernel(s->prog, "scan_add", &err);
        if (err == CL_SUCCESS) s->lookback = clCreateKernel(s->prog, "scan_lookback", &err);
        if (err != CL_SUCCESS) st = clx_fail("clCreateKernel", err);
    }
    if (st != CLS_OK) {
        clx_scan_free(s);
        return st;
    }
    *out = s;
    return CLS_OK;
}

void clx_scan_free(clx_scan *s)
{
    if (!s) return;
    if (s->tiles) clReleaseKernel(s->tiles);
    if (s->add) clReleaseKernel(s->add);
    if (s->lookback) clReleaseKernel(s->lookback);
    if (s->prog) clReleaseProgram(s->prog);
    free(s);
}

/* Enqueues kernel k over the tiles of n elements with its arguments; keeps the first event
 * of a run in *first and the latest in *last. */
static cls_status enqueue(clx_scan *s, cl_kernel k, const char *name, cl_mem a, cl_mem b, cl_mem c, cl_uint n,
                          cl_event *first, cl_event *last)
{
    size_t global = (n + s->tile - 1) / s->tile * s->wg;
    cl_uint i = 0;
    cl_int err = clSetKernelArg(k, i++, sizeof a, &a);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, i++, sizeof b, &b);
    if (err == CL_SUCCESS && c) err = clSetKernelArg(k, i++, sizeof c, &c);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, i++, sizeof n, &n);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clSetKernelArg", err), "%s: ", name);
    cl_event ev;
    err = clEnqueueNDRangeKernel(s->q->q, k, 1, NULL, &global, &s->wg, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "%s: ", name);
    if (*last && *last != *first) clReleaseEvent(*last);
    if (!*first) *first = ev;
    *last = ev;
    return CLS_OK;
}

/* The single pass: state and ticket zeroed once, then reps + 1 runs of scan_lookback. */
static cls_status run_lookback(clx_scan *s, const uint32_t *in, uint32_t n, unsigned reps, double *times, uint32_t *out)
{
    cl_uint tiles = (cl_uint)((n + s->tile - 1) / s->tile);
    cl_int err = CL_SUCCESS;
    cl_mem src = clCreateBuffer(s->q->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * 4, (void *)in, &err);
    cl_mem dst = err == CL_SUCCESS ? clCreateBuffer(s->q->ctx, CL_MEM_READ_WRITE, (size_t)n * 4, NULL, &err) : NULL;
    cl_mem state = err == CL_SUCCESS ? clCreateBuffer(s->q->ctx, CL_MEM_READ_WRITE, (size_t)tiles * 8, NULL, &err) : NULL;
    cl_mem ticket = err == CL_SUCCESS ? clCreateBuffer(s->q->ctx, CL_MEM_READ_WRITE, 4, NULL, &err) : NULL;
    cls_status st = err == CL_SUCCESS ? CLS_OK : err_wrap(clx_fail("clCreateBuffer", err), "scan of %u elements: ", n);
    static const cl_ulong zero = 0;
    if (st == CLS_OK && ((err = clEnqueueFillBuffer(s->q->q, state, &zero, 8, 0, (size_t)tiles * 8, 0, NULL, NULL)) !=
                             CL_SUCCESS ||
                         (err = clEnqueueFillBuffer(s->q->q, ticket, &zero, 4, 0, 4, 0, NULL, NULL)) != CL_SUCCESS))
        st = clx_fail("clEnqueueFillBuffer", err);
    cl_uint first = 0;
    for (unsigned r = 0; r <= reps && st == CLS_OK; r++) { /* r = 0: warm-up */
        cl_uint run = r + 1; /* below 2^30: reps is far smaller */
        cl_uint i = 0, nn = n;
        err = clSetKernelArg(s->lookback, i++, sizeof src, &src);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof dst, &dst);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof state, &state);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof ticket, &ticket);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof run, &run);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof first, &first);
        if (err == CL_SUCCESS) err = clSetKernelArg(s->lookback, i++, sizeof nn, &nn);
        if (err != CL_SUCCESS) {
            st = err_wrap(clx_fail("clSetKernelArg", err), "scan_lookback: ");
            break;
        }
        size_t global = (size_t)tiles * s->wg;
        cl_event ev;
        err = clEnqueueNDRangeKernel(s->q->q, s->lookback, 1, NULL, &global, &s->wg, 0, NULL, &ev);
        if (err != CL_SUCCESS) {
            st = err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "scan_lookback: ");
            break;
        }
        if ((err = clWaitForEvents(1, &ev)) != CL_SUCCESS) st = clx_fail("clWaitForEvents", err);
        if (st == CLS_OK && r > 0) times[r - 1] = clx_event_span(ev, ev);
        clReleaseEvent(ev);
        first += tiles; /* the ticket's value after this run, mod 2^32 like the kernel's */
    }
    if (st == CLS_OK && (err = clEnqueueReadBuffer(s->q->q, dst, CL_TRUE, 0, (size_t)n * 4, out, 0, NULL, NULL)) != CL_SUCCESS)
        st = clx_fail("clEnqueueReadBuffer", err);
    cl_mem all[] = {src, dst, state, ticket};
    for (unsigned i = 0; i < 4; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    return st;
}

cls_status clx_scan_run(clx_scan *s, const uint32_t *in, uint32_t n, unsigned reps, double *times, uint32_t *out)
{
    if (n == 0) return CLS_OK;
    if (s->method == CLX_SCAN_LOOKBACK) return run_lookback(s, in, n, reps, times, out);
    cl_uint len[MAX_LEVELS];
    unsigned levels = 0;
    for (cl_uint m = n;; m = (cl_uint)((m + s->tile - 1) / s->tile)) { /* n, its tile count, ... 1 tile */
        if (levels == MAX_LEVELS) return err_set(CLS_E_ARG, "scan: %u elements need too many levels", n);
        len[levels++] = m;
        if (m <= s->tile) break;
    }
    /* src[l]: level l's input (src[l + 1] its tile totals); dst[l]: its scan */
    cl_mem src[MAX_LEVELS + 1] = {0}, dst[MAX_LEVELS + 1] = {0};
    cls_status st = CLS_OK;
    cl_int err = CL_SUCCESS;
    for (unsigned l = 0; l <= levels && err == CL_SUCCESS; l++) {
        size_t bytes = (l < levels ? len[l] : 1) * sizeof(cl_uint);
        src[l] = l == 0 ? clCreateBuffer(s->q->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)in, &err)
                        : clCreateBuffer(s->q->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err == CL_SUCCESS) dst[l] = clCreateBuffer(s->q->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    }
    if (err != CL_SUCCESS) st = err_wrap(clx_fail("clCreateBuffer", err), "scan of %u elements: ", n);
    for (unsigned r = 0; r <= reps && st == CLS_OK; r++) { /* r = 0: warm-up */
        cl_event first = NULL, last = NULL;
        for (unsigned l = 0; l < levels && st == CLS_OK; l++)
            st = enqueue(s, s->tiles, "scan_tiles", src[l], dst[l], src[l + 1], len[l], &first, &last);
        for (unsigned l = levels - 1; l-- > 0 && st == CLS_OK;) /* the top level is one tile: complete */
            st = enqueue(s, s->add, "scan_add", dst[l], dst[l + 1], NULL, len[l], &first, &last);
        if (st == CLS_OK && (err = clWaitForEvents(1, &last)) != CL_SUCCESS) st = clx_fail("clWaitForEvents", err);
        if (st == CLS_OK && r > 0) times[r - 1] = clx_event_span(first, last);
        if (first) clReleaseEvent(first);
        if (last && last != first) clReleaseEvent(last);
    }
    if (st == CLS_OK &&
        (err = clEnqueueReadBuffer(s->q->q, dst[0], CL_TRUE, 0, (size_t)n * 4, out, 0, NULL, NULL)) != CL_SUCCESS)
        st = clx_fail("clEnqueueReadBuffer", err);
    for (unsigned l = 0; l <= levels; l++) {
        if (src[l]) clReleaseMemObject(src[l]);
        if (dst[l]) clReleaseMemObject(dst[l]);
    }
    return st;
}
