/* Benchmark hooks (bench_hooks.h): decode_blocks and the top-k kernels alone through the engine's own
 * launch functions, each run timed by its profiling event. */
#include "bench_hooks.h"

#include <stdlib.h>
#include <string.h>

#include "algo/decode.h"
#include "algo/topk.h"
#include "engine/dev_engine.h"
#include "engine/plan.h"
#include "util/err.h"
#include "util/vec.h"

/* Waits for the batch's last command, takes the time from its first command's start to the last
 * one's end (top-k of a few long rows is several kernels: topk_run), and releases the events. */
static cls_status last_time(clx_engine *e, double *t)
{
    cl_event ev = e->dc.events[e->dc.nevents - 1].ev;
    cl_int err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS && t) *t = clx_event_span(e->dc.events[0].ev, ev);
    dev_profile_collect(&e->dc, 0);
    return err == CL_SUCCESS ? CLS_OK : clx_fail("clWaitForEvents", err);
}

cls_status clx_bench_decode(clx_engine *e, const uint32_t *sel, uint64_t b0, uint32_t nb, unsigned reps,
                            double *kernel_s, double *upload_s)
{
    const cls_index *x = e->idx;
    if (!sel && (b0 > x->num_blocks || nb > x->num_blocks - b0)) return err_set(CLS_E_ARG, "block range out of the index");
    for (uint32_t i = 0; sel && i < nb; i++)
        if (sel[i] >= x->num_blocks) return err_set(CLS_E_ARG, "block %u out of the index", sel[i]);
    uint32_t B = x->block_size;
    cl_event ev = NULL;
    *upload_s = 0;
    /* the index upload, timed: words and block records, as clx_create sends them */
    size_t wbytes = (size_t)x->num_words * 4, bbytes = (size_t)x->num_blocks * sizeof(idx_block);
    if (wbytes) {
        CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, e->d_words, CL_TRUE, 0, wbytes, x->words, 0, NULL, &ev));
        *upload_s += clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    if (bbytes) {
        CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, e->d_blocks, CL_TRUE, 0, bbytes, x->blocks, 0, NULL, &ev));
        *upload_s += clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    abi_task *tasks = malloc(((size_t)nb + 1) * sizeof *tasks);
    if (!tasks) return err_set(CLS_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < nb; i++) tasks[i] = (abi_task){.block = sel ? sel[i] : (uint32_t)(b0 + i), .dst = i * B};
    dbuf tk = {0};
    size_t outb = (size_t)nb * B * 4;
    cls_status s;
    if ((s = dev_upload(&e->dc, &tk, tasks, (size_t)nb * sizeof *tasks, "tasks")) == CLS_OK &&
        (s = dev_buf_need(&e->dc, &e->docs, outb, "docs")) == CLS_OK &&
        (s = dev_buf_need(&e->dc, &e->freqs, outb, "freqs")) == CLS_OK) {
        for (unsigned r = 0; r <= reps && s == CLS_OK; r++) { /* r = 0: warm-up */
            if ((s = decode_run(&e->dc, B, e->d_words, e->d_blocks, tk.mem, 0, nb, e->docs.mem, e->freqs.mem, "decode")) !=
                CLS_OK)
                break;
            if (nb) s = last_time(e, r > 0 ? &kernel_s[r - 1] : NULL);
            else if (r > 0) kernel_s[r - 1] = 0;
        }
    }
    dev_profile_collect(&e->dc, 0);
    dev_buf_release(&tk);
    free(tasks);
    return s;
}

cls_status clx_bench_decoded(clx_engine *e, uint32_t nb, uint32_t *docs, uint32_t *freqs)
{
    size_t outb = (size_t)nb * e->idx->block_size * 4;
    CLX_TRY(clEnqueueReadBuffer(e->dc.queue, e->docs.mem, CL_TRUE, 0, outb, docs, 0, NULL, NULL));
    CLX_TRY(clEnqueueReadBuffer(e->dc.queue, e->freqs.mem, CL_TRUE, 0, outb, freqs, 0, NULL, NULL));
    return CLS_OK;
}

cls_status clx_bench_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, unsigned reps,
                          double *kernel_s, double *upload_s, uint32_t *counts, uint32_t *docs, float *out_scores,
                          const char **kernel)
{
    dbuf rows = {0};
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    topk_input in = {.dense = 1, .num_docs = N, .kk = k, .P = plan_scratch(k)};
    cls_status s = dev_buf_need(&e->dc, &rows, (size_t)nq * N * 4, "score rows");
    if (s == CLS_OK) s = dev_buf_need(&e->dc, &e->out, out_len * 4, "results");
    if (s == CLS_OK && !vec_reserve(&e->h_out, &e->h_out_cap, out_len + 1, 4)) s = err_set(CLS_E_NOMEM, "out of memory");
    cl_event ev;
    cl_int err = s == CLS_OK ? clEnqueueWriteBuffer(e->dc.queue, rows.mem, CL_TRUE, 0, (size_t)nq * N * 4, scores, 0,
                                                    NULL, &ev)
                             : CL_SUCCESS;
    if (s == CLS_OK && err != CL_SUCCESS) s = clx_fail("clEnqueueWriteBuffer", err);
    if (s == CLS_OK) {
        *upload_s = clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    in.scores = in.cand_docs = rows.mem;
    for (unsigned r = 0; r <= reps && s == CLS_OK; r++) /* r = 0: warm-up */
        if ((s = topk_run(&e->topk, &in, nq, e->out.mem, "topk")) == CLS_OK)
            s = last_time(e, r > 0 ? &kernel_s[r - 1] : NULL);
    dev_profile_collect(&e->dc, 0);
    if (s == CLS_OK) {
        err = clEnqueueReadBuffer(e->dc.queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL);
        if (err != CL_SUCCESS) s = clx_fail("clEnqueueReadBuffer", err);
    }
    dev_buf_release(&rows);
    if (s != CLS_OK) return s;
    memcpy(counts, e->h_out, (size_t)nq * 4);
    memcpy(docs, e->h_out + ABI_OUT_DOC((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    memcpy(out_scores, e->h_out + ABI_OUT_SCORE((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    *kernel = e->topk.ran;
    return CLS_OK;
}
