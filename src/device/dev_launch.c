/* One device's plumbing (dev.h): context and queue, programs built into its kernel table, device
 * buffers that grow, kernel arguments set and checked by name, commands counted toward named
 * profile steps. */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/clx_guard.h"
#include "device/dev.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

cls_status dev_open(dev_ctx *dc)
{
    cl_int err;
    dc->ctx = clx_create_context(dc->dev.device, &err); /* POCL may throw: clx_guard.cpp */
    if (!dc->ctx || err != CL_SUCCESS) {
        dc->ctx = NULL;
        return clx_fail("clCreateContext", err);
    }
    dc->queue = clCreateCommandQueue(dc->ctx, dc->dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!dc->queue || err != CL_SUCCESS) {
        dc->queue = NULL;
        return clx_fail("clCreateCommandQueue", err);
    }
    dc->from_cache = 1;
    return CLS_OK;
}

void dev_close(dev_ctx *dc)
{
    dev_profile_collect(dc, 0);
    for (unsigned i = 0; i < dc->nkernels; i++) clx_release_kernel(dc->kernels[i].k);
    if (dc->queue) clReleaseCommandQueue(dc->queue);
    if (dc->ctx) clReleaseContext(dc->ctx);
    free(dc->kernels);
    free(dc->steps);
    free(dc->events);
    dc->kernels = NULL;
    dc->steps = NULL;
    dc->events = NULL;
    dc->nkernels = dc->nsteps = dc->nevents = 0;
    dc->kernels_cap = dc->steps_cap = dc->events_cap = 0;
    dc->queue = NULL;
    dc->ctx = NULL;
}

/* A thread asleep until its event's callback (dev_wait). The callback signals with the mutex
 * held, so the waiter, which returns only after taking it, never leaves the callback a freed
 * waiter to touch. */
typedef struct dev_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    cl_int status;
} dev_waiter;

static void CL_CALLBACK dev_waiter_wake(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    dev_waiter *w = arg;
    pthread_mutex_lock(&w->mu);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

cls_status dev_wait(dev_ctx *dc, cl_event ev, const char *what)
{
    char call[128];
    cl_int err, st = CL_COMPLETE;
    if (dc->prm.host_wait == 1) {
        dev_waiter w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .status = CL_COMPLETE};
        /* called at once (maybe on this thread) when the command has already ended */
        err = clSetEventCallback(ev, CL_COMPLETE, dev_waiter_wake, &w);
        if (err != CL_SUCCESS) {
            snprintf(call, sizeof call, "clSetEventCallback(%s)", what);
            return clx_fail(call, err);
        }
        pthread_mutex_lock(&w.mu);
        while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
        st = w.status;
        pthread_mutex_unlock(&w.mu);
        pthread_cond_destroy(&w.cv);
        pthread_mutex_destroy(&w.mu);
    } else {
        err = clWaitForEvents(1, &ev);
        if (err == CL_SUCCESS) err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
        if (err != CL_SUCCESS) {
            snprintf(call, sizeof call, "clWaitForEvents(%s)", what);
            return clx_fail(call, err);
        }
    }
    if (st < 0) {
        snprintf(call, sizeof call, "the command of %s", what);
        return clx_fail(call, st);
    }
    return CLS_OK;
}

cls_status dev_build(dev_ctx *dc, const char *const *files, const char *options, cl_program *out, char *note,
                     size_t note_len)
{
    double secs = 0;
    int cached = 0;
    cls_status s = clx_build(dc->ctx, &dc->dev, files, options, out, &secs, &cached, note, note_len);
    if (s != CLS_OK) return s;
    dc->build_secs += secs;
    dc->from_cache = dc->from_cache && cached;
    return CLS_OK;
}

cl_mem dev_create_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
    if (fault_hit(FAULT_DEVICE_ALLOC)) {
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    return clCreateBuffer(ctx, flags, size, host, err);
}

cls_status dev_buf_need(dev_ctx *dc, dbuf *b, size_t need, const char *what)
{
    if (need < DEV_MIN_BUF) need = DEV_MIN_BUF;
    if (b->mem && b->cap >= need) return CLS_OK;
    if (need > dc->dev.info.max_alloc)
        return err_set(CLS_E_DEVMEM, "%s needs %zu bytes, more than the device allows in one buffer (%llu)", what, need,
                       (unsigned long long)dc->dev.info.max_alloc);
    dev_buf_release(b);
    /* an eighth of headroom, not doubling: capacities near the budget must not overshoot it twofold */
    size_t cap = need + need / 8;
    if (cap > dc->dev.info.max_alloc) cap = need;
    cl_int err;
    b->mem = dev_create_buffer(dc->ctx, CL_MEM_READ_WRITE, cap, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        b->mem = NULL;
        b->cap = 0;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes): ", what, cap);
    }
    b->cap = cap;
    return CLS_OK;
}

void dev_pinned_release(dev_ctx *dc, dev_pinned *p)
{
    if (p->host) clEnqueueUnmapMemObject(dc->queue, p->mem, p->host, 0, NULL, NULL);
    if (p->mem) clReleaseMemObject(p->mem);
    *p = (dev_pinned){0};
}

cls_status dev_pinned_need(dev_ctx *dc, dev_pinned *p, size_t need, const char *what)
{
    if (need < DEV_MIN_BUF) need = DEV_MIN_BUF;
    if (p->mem && p->cap >= need) return CLS_OK;
    /* exact the first time (staging of a fixed size), an eighth of headroom when it grows */
    const size_t cap = p->cap ? need + need / 8 : need;
    dev_pinned_release(dc, p);
    cl_int err;
    p->mem = dev_create_buffer(dc->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, cap, NULL, &err);
    if (!p->mem || err != CL_SUCCESS) {
        p->mem = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes of pinned host memory): ", what, cap);
    }
    p->host = clEnqueueMapBuffer(dc->queue, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, cap, 0, NULL, NULL, &err);
    if (!p->host || err != CL_SUCCESS) {
        p->host = NULL;
        dev_pinned_release(dc, p);
        return err_wrap(clx_fail("clEnqueueMapBuffer", err), "mapping %s (%zu bytes): ", what, cap);
    }
    p->cap = cap;
    return CLS_OK;
}

void dev_buf_release(dbuf *b)
{
    if (b->mem) clReleaseMemObject(b->mem);
    b->mem = NULL;
}

cls_status dev_upload(dev_ctx *dc, dbuf *b, const void *data, size_t bytes, const char *what)
{
    cls_status s = dev_buf_need(dc, b, bytes, what);
    if (s == CLS_OK && bytes) CLX_TRY(clEnqueueWriteBuffer(dc->queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL));
    return s;
}

cls_status dev_words_count(cl_mem words, cl_uint *nwords)
{
    size_t wbytes = 0;
    cl_int err = clGetMemObjectInfo(words, CL_MEM_SIZE, sizeof wbytes, &wbytes, NULL);
    if (err != CL_SUCCESS) return clx_fail("clGetMemObjectInfo(CL_MEM_SIZE)", err);
    *nwords = wbytes / 4 > UINT32_MAX ? UINT32_MAX : (cl_uint)(wbytes / 4);
    if (*nwords == 0) return err_set(CLS_E_ARG, "a words buffer of %zu bytes", wbytes);
    return CLS_OK;
}

/* The index of the kernel called name in dc's table, or dc->nkernels. */
static unsigned kernel_at(const dev_ctx *dc, const char *name)
{
    unsigned i = 0;
    while (i < dc->nkernels && strcmp(dc->kernels[i].name, name) != 0) i++;
    return i;
}

cl_kernel dev_kernel(const dev_ctx *dc, const char *name)
{
    unsigned i = kernel_at(dc, name);
    return i < dc->nkernels ? dc->kernels[i].k : NULL;
}

cls_status dev_add_kernel(dev_ctx *dc, cl_program prog, const char *name)
{
    if (!vec_reserve(&dc->kernels, &dc->kernels_cap, (size_t)dc->nkernels + 1, sizeof *dc->kernels))
        return err_set(CLS_E_NOMEM, "out of memory for kernel %s", name);
    cl_int err;
    cl_kernel k = clx_create_kernel(prog, name, &err);
    if (!k || err != CL_SUCCESS) return err_wrap(clx_fail("clCreateKernel", err), "kernel %s: ", name);
    cl_uint nargs = 0;
    err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    if (err != CL_SUCCESS) {
        clx_release_kernel(k);
        return err_wrap(clx_fail("clGetKernelInfo(CL_KERNEL_NUM_ARGS)", err), "kernel %s: ", name);
    }
    dc->kernels[dc->nkernels++] = (dev_kernel_entry){.k = k, .name = name, .nargs = nargs};
    return CLS_OK;
}

cls_status dev_need_kernel(dev_ctx *dc, cl_program prog, const char *name)
{
    return dev_kernel(dc, name) ? CLS_OK : dev_add_kernel(dc, prog, name);
}

/* A slot for one more profiled command, counted toward the step called name (added on first
 * use; the names are static strings): *step. Taken before a command is enqueued, so a table
 * that cannot grow fails the launch with its reason instead of losing the command's event. */
static cls_status profile_slot(dev_ctx *dc, const char *name, int transfer, unsigned *step)
{
    if (!vec_reserve(&dc->events, &dc->events_cap, (size_t)dc->nevents + 1, sizeof *dc->events))
        return err_set(CLS_E_NOMEM, "out of memory for the profile (step %s)", name);
    for (unsigned i = 0; i < dc->nsteps; i++)
        if (strcmp(dc->steps[i].name, name) == 0) {
            if (dc->steps[i].transfer != transfer) /* a step is transfers or device work, never both */
                return err_set(CLS_E_ARG, "profile step %s counts both transfers and device work", name);
            *step = i;
            return CLS_OK;
        }
    if (!vec_reserve(&dc->steps, &dc->steps_cap, (size_t)dc->nsteps + 1, sizeof *dc->steps))
        return err_set(CLS_E_NOMEM, "out of memory for the profile (step %s)", name);
    dc->steps[dc->nsteps] = (cls_profile_step){.name = name, .transfer = transfer};
    *step = dc->nsteps++;
    return CLS_OK;
}

/* Keeps ev for the profile, or releases it where no slot is left (its command still runs). */
static cls_status record(dev_ctx *dc, cl_event ev, const char *name, int transfer, uint64_t bytes)
{
    unsigned step;
    cls_status s = profile_slot(dc, name, transfer, &step);
    if (s != CLS_OK) {
        clReleaseEvent(ev);
        return s;
    }
    dc->events[dc->nevents++] = (dev_event){.ev = ev, .step = step, .bytes = bytes};
    return CLS_OK;
}

cls_status dev_record(dev_ctx *dc, cl_event ev, const char *step, uint64_t bytes)
{
    return record(dc, ev, step, 1, bytes);
}

cls_status dev_record_fill(dev_ctx *dc, cl_event ev, const char *step) { return record(dc, ev, step, 0, 0); }

cls_status dev_run_n(dev_ctx *dc, const char *kernel, const dev_arg *args, unsigned nargs, size_t groups, size_t wg,
                     const char *step)
{
    unsigned at = kernel_at(dc, kernel);
    if (at == dc->nkernels) return err_set(CLS_E_ARG, "no kernel called %s in the engine's programs", kernel);
    if (nargs != dc->kernels[at].nargs)
        return err_set(CLS_E_ARG, "kernel %s takes %u arguments, given %u", kernel, dc->kernels[at].nargs, nargs);
    cl_kernel k = dc->kernels[at].k;
    for (unsigned i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) return err_wrap(clx_fail("clSetKernelArg", err), "kernel %s, argument %u: ", kernel, i);
    }
    if (groups == 0) return CLS_OK;
    unsigned st;
    cls_status s = profile_slot(dc, step, 0, &st);
    if (s != CLS_OK) return err_wrap(s, "kernel %s: ", kernel);
    size_t global = groups * wg;
    cl_event ev = NULL;
    cl_int err = fault_hit(FAULT_ENQUEUE) ? CL_OUT_OF_RESOURCES
                                          : clEnqueueNDRangeKernel(dc->queue, k, 1, NULL, &global, &wg, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "kernel %s: ", kernel);
    dc->events[dc->nevents++] = (dev_event){.ev = ev, .step = st};
    return CLS_OK;
}

void dev_profile_collect(dev_ctx *dc, int ok) { dev_profile_collect_first(dc, dc->nevents, ok); }

void dev_profile_collect_first(dev_ctx *dc, unsigned n, int ok)
{
    assert(n <= dc->nevents);
    for (unsigned i = 0; i < n; i++) {
        cls_profile_step *st = &dc->steps[dc->events[i].step];
        if (ok) {
            st->seconds += clx_event_span(dc->events[i].ev, dc->events[i].ev);
            st->bytes += dc->events[i].bytes;
        }
        clReleaseEvent(dc->events[i].ev);
    }
    if (n) memmove(dc->events, dc->events + n, (dc->nevents - n) * sizeof *dc->events);
    dc->nevents -= n;
}

void dev_profile_reset(dev_ctx *dc)
{
    dev_profile_collect(dc, 0);
    dc->nsteps = 0;
}
