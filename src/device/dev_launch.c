/* Launching kernels and taking their time: device buffers that grow, kernel arguments set and
 * checked by name, commands counted toward named profile steps, and the two kernel families
 * every algorithm shares (decode_blocks, topk_select). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

cl_mem dev_create_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
    if (fault_hit(FAULT_DEVICE_ALLOC)) {
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    return clCreateBuffer(ctx, flags, size, host, err);
}

cls_status dev_buf_need(clx_engine *e, dbuf *b, size_t need, const char *what)
{
    if (need < DEV_MIN_BUF) need = DEV_MIN_BUF;
    if (b->mem && b->cap >= need) return CLS_OK;
    if (need > e->dev.info.max_alloc)
        return err_set(CLS_E_DEVMEM, "%s needs %zu bytes, more than the device allows in one buffer (%llu)", what, need,
                       (unsigned long long)e->dev.info.max_alloc);
    dev_buf_release(b);
    /* an eighth of headroom, not doubling: capacities near the budget must not overshoot it twofold */
    size_t cap = need + need / 8;
    if (cap > e->dev.info.max_alloc) cap = need;
    cl_int err;
    b->mem = dev_create_buffer(e->ctx, CL_MEM_READ_WRITE, cap, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        b->mem = NULL;
        b->cap = 0;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes): ", what, cap);
    }
    b->cap = cap;
    return CLS_OK;
}

void dev_buf_release(dbuf *b)
{
    if (b->mem) clReleaseMemObject(b->mem);
    b->mem = NULL;
}

cl_kernel dev_kernel(const clx_engine *e, const char *name)
{
    for (unsigned i = 0; i < e->nkernels; i++)
        if (strcmp(e->kernel_names[i], name) == 0) return e->kernels[i];
    return NULL;
}

/* The profile step called name (added on first use; the names are static strings). */
static unsigned step_of(clx_engine *e, const char *name, int transfer)
{
    for (unsigned i = 0; i < e->nsteps; i++)
        if (strcmp(e->steps[i].name, name) == 0) return i;
    assert(e->nsteps < DEV_MAX_STEPS);
    e->steps[e->nsteps] = (cls_profile_step){.name = name, .transfer = transfer};
    return e->nsteps++;
}

void dev_record(clx_engine *e, cl_event ev, const char *step, uint64_t bytes)
{
    assert(e->nevents < DEV_MAX_EVENTS);
    e->events[e->nevents++] = (dev_event){.ev = ev, .step = step_of(e, step, 1), .bytes = bytes};
}

cls_status dev_run(clx_engine *e, const char *kernel, const dev_arg *args, unsigned nargs, size_t groups, size_t wg,
                   const char *step)
{
    cl_kernel k = dev_kernel(e, kernel);
    if (!k) return err_set(CLS_E_ARG, "no kernel called %s in the engine's programs", kernel);
    for (unsigned i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, i, args[i].size, args[i].ptr);
        if (err != CL_SUCCESS) return err_wrap(clx_fail("clSetKernelArg", err), "kernel %s, argument %u: ", kernel, i);
    }
    if (groups == 0) return CLS_OK;
    size_t global = groups * wg;
    cl_event ev = NULL;
    cl_int err = fault_hit(FAULT_ENQUEUE) ? CL_OUT_OF_RESOURCES
                                          : clEnqueueNDRangeKernel(e->queue, k, 1, NULL, &global, &wg, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "kernel %s: ", kernel);
    assert(e->nevents < DEV_MAX_EVENTS);
    e->events[e->nevents++] = (dev_event){.ev = ev, .step = step_of(e, step, 0)};
    return CLS_OK;
}

void dev_profile_collect(clx_engine *e, int ok)
{
    for (unsigned i = 0; i < e->nevents; i++) {
        cls_profile_step *st = &e->steps[e->events[i].step];
        if (ok) {
            st->seconds += clx_event_span(e->events[i].ev, e->events[i].ev);
            st->bytes += e->events[i].bytes;
        }
        clReleaseEvent(e->events[i].ev);
    }
    e->nevents = 0;
}

void dev_profile_reset(clx_engine *e)
{
    dev_profile_collect(e, 0);
    e->nsteps = 0;
    e->batches = 0;
}

cls_status dev_decode(clx_engine *e, cl_mem words, cl_mem blocks, cl_mem tasks, cl_uint task_base, size_t ntasks,
                      const char *step)
{
    /* the decoders read no word past the buffer's last, whatever a stream holds (decode.cl) */
    size_t wbytes = 0;
    cl_int err = clGetMemObjectInfo(words, CL_MEM_SIZE, sizeof wbytes, &wbytes, NULL);
    if (err != CL_SUCCESS) return clx_fail("clGetMemObjectInfo(CL_MEM_SIZE)", err);
    cl_uint nwords = wbytes / 4 > UINT32_MAX ? UINT32_MAX : (cl_uint)(wbytes / 4);
    if (nwords == 0) return err_set(CLS_E_ARG, "decode_blocks: a words buffer of %zu bytes", wbytes);
    dev_arg a[] = {DEV_MEM(words), DEV_U32(nwords), DEV_MEM(blocks), DEV_MEM(tasks), DEV_U32(task_base),
                   DEV_MEM(e->docs.mem), DEV_MEM(e->freqs.mem)};
    return dev_run(e, "decode_blocks", a, 7, ntasks, e->idx->block_size, step);
}

cls_status dev_topk(clx_engine *e, const dev_batch *b, cl_uint groups, cl_mem out, const char *step)
{
    cl_uint num_docs = b->num_docs;
    cl_mem seg = b->seg ? b->seg : b->cand_docs; /* dense rows read no segment */
    dev_arg a[] = {DEV_MEM(b->scores), DEV_MEM(b->cand_docs), DEV_MEM(seg),        DEV_U32(b->key_shift),
                   DEV_U32(b->dense),  DEV_U32(num_docs),     DEV_U32(b->kk),      DEV_U32(b->P),
                   DEV_U32(groups),    DEV_MEM(e->sdoc.mem),  DEV_MEM(e->sscore.mem), DEV_MEM(out)};
    return dev_run(e, "topk_select", a, 12, groups, e->prm.wg_topk, step);
}

cls_status dev_upload(clx_engine *e, dbuf *b, const void *data, size_t bytes, const char *what)
{
    cls_status s = dev_buf_need(e, b, bytes, what);
    if (s == CLS_OK && bytes) CLX_TRY(clEnqueueWriteBuffer(e->queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL));
    return s;
}

cls_status dev_topk_rows(clx_engine *e, uint32_t nq, uint32_t N, uint32_t k, dev_batch *b)
{
    uint32_t P = plan_scratch(k);
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    abi_query *none = calloc((size_t)nq + 1, sizeof *none); /* empty descriptors: top-k reads none of them */
    if (!none || !vec_reserve(&e->h_out, &e->h_out_cap, out_len + 1, 4)) {
        free(none);
        return err_set(CLS_E_NOMEM, "out of memory");
    }
    cls_status s;
    if ((s = dev_buf_need(e, &e->acc, (size_t)nq * N * 4, "score rows")) != CLS_OK ||
        (s = dev_upload(e, &e->in, none, (size_t)nq * sizeof *none, "query descriptors")) != CLS_OK ||
        (s = dev_buf_need(e, &e->cand, 4, "candidates")) != CLS_OK ||
        (s = dev_buf_need(e, &e->sdoc, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dev_buf_need(e, &e->sscore, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dev_buf_need(e, &e->out, out_len * 4, "results")) != CLS_OK) {
        free(none);
        return s;
    }
    free(none);
    *b = (dev_batch){.e = e, .nq = nq, .num_docs = N, .in = e->in.mem, .kk = k, .P = P, .scores = e->acc.mem,
                     .cand_docs = e->cand.mem, .dense = 1};
    return CLS_OK;
}
