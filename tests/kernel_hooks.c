/* Test hooks (kernel_hooks.h): decode_blocks and the top-k kernels alone, through the engine's own
 * launch functions (src/device/dev_launch.c). */
#include "kernel_hooks.h"

#include <stdlib.h>
#include <string.h>

#include "device/dev.h"
#include "util/err.h"

cls_status clx_test_decode(clx_engine *e, const uint32_t *words, uint64_t nwords, const idx_block *blocks, uint32_t n,
                           uint32_t *docs, uint32_t *freqs)
{
    dbuf w = {0}, bl = {0}, tk = {0};
    abi_task *tasks = malloc(((size_t)n + 1) * sizeof *tasks);
    if (!tasks) return err_set(CLS_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) tasks[i] = (abi_task){.block = i, .dst = i * e->idx->block_size};
    size_t outb = (size_t)n * e->idx->block_size * 4;
    cls_status s;
    if ((s = dev_upload(e, &w, words, (size_t)nwords * 4 + 4, "words")) == CLS_OK &&
        (s = dev_upload(e, &bl, blocks, (size_t)n * sizeof *blocks, "blocks")) == CLS_OK &&
        (s = dev_upload(e, &tk, tasks, (size_t)n * sizeof *tasks, "tasks")) == CLS_OK &&
        (s = dev_buf_need(e, &e->docs, outb, "docs")) == CLS_OK && (s = dev_buf_need(e, &e->freqs, outb, "freqs")) == CLS_OK) {
        s = dev_decode(e, w.mem, bl.mem, tk.mem, 0, n, "decode");
        cl_int r1 = CL_SUCCESS, r2 = CL_SUCCESS;
        if (s == CLS_OK && outb) {
            r1 = clEnqueueReadBuffer(e->queue, e->docs.mem, CL_TRUE, 0, outb, docs, 0, NULL, NULL);
            r2 = clEnqueueReadBuffer(e->queue, e->freqs.mem, CL_TRUE, 0, outb, freqs, 0, NULL, NULL);
        }
        if (s == CLS_OK && (r1 != CL_SUCCESS || r2 != CL_SUCCESS)) s = clx_fail("clEnqueueReadBuffer", r1 ? r1 : r2);
    }
    dev_profile_collect(e, 0);
    dev_buf_release(&w);
    dev_buf_release(&bl);
    dev_buf_release(&tk);
    free(tasks);
    return s;
}

cls_status clx_test_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, uint32_t *counts,
                         uint32_t *docs, float *out_scores)
{
    dev_batch b;
    cls_status s = dev_topk_rows(e, nq, N, k, &b);
    if (s == CLS_OK) s = dev_upload(e, &e->acc, scores, (size_t)nq * N * 4, "scores");
    if (s == CLS_OK) s = dev_topk(e, &b, nq, e->out.mem, "topk");
    dev_profile_collect(e, 0);
    if (s != CLS_OK) return s;
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL));
    memcpy(counts, e->h_out, (size_t)nq * 4);
    memcpy(docs, e->h_out + ABI_OUT_DOC((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    memcpy(out_scores, e->h_out + ABI_OUT_SCORE((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    return CLS_OK;
}

void clx_test_topk_force(clx_engine *e, int force)
{
    e->topk_force = force == TEST_TOPK_SELECT       ? DEV_TOPK_SELECT
                   : force == TEST_TOPK_ROWS_LEAST ? DEV_TOPK_ROWS_LEAST
                   : force == TEST_TOPK_ROWS       ? DEV_TOPK_ROWS
                   : force == TEST_TOPK_WIDE_SELECT ? DEV_TOPK_WIDE_SELECT
                                                   : 0;
}
const char *clx_test_topk_ran(const clx_engine *e) { return e->topk_ran; }
uint32_t clx_test_topk_rows_cap(const clx_engine *e, uint32_t N, uint32_t k) { return dev_topk_rows_cap(e, N, k); }
int clx_test_topk_team_fits(const clx_engine *e, uint32_t N, uint32_t k) { return dev_topk_team_fits(e, N, k); }
uint32_t clx_test_compute_units(const clx_engine *e) { return e->dev.info.compute_units; }

cls_status clx_test_topk_seg(clx_engine *e, const uint32_t *keys, const uint32_t *docs, uint64_t n, const uint32_t *seg,
                             uint32_t nq, uint32_t k, uint32_t *counts, uint32_t *out_docs, float *out_scores)
{
    dev_batch b;
    dbuf sg = {0};
    /* dense-row buffers of one score a row for the scratch and the output; the segments' keys
     * and docIDs then replace the rows */
    cls_status s = dev_topk_rows(e, nq, 1, k, &b);
    if (s == CLS_OK) s = dev_upload(e, &e->acc, keys, (size_t)n * 4 + 4, "keys");
    if (s == CLS_OK) s = dev_upload(e, &e->cand, docs, (size_t)n * 4 + 4, "docIDs");
    if (s == CLS_OK) s = dev_upload(e, &sg, seg, (size_t)nq * 8, "segments");
    if (s == CLS_OK) {
        b.scores = e->acc.mem;
        b.cand_docs = e->cand.mem;
        b.seg = sg.mem;
        b.dense = 0;
        b.key_shift = 0;
        s = dev_topk(e, &b, nq, e->out.mem, "topk");
    }
    dev_profile_collect(e, 0);
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    if (s == CLS_OK) {
        cl_int err = clEnqueueReadBuffer(e->queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL);
        if (err != CL_SUCCESS) s = clx_fail("clEnqueueReadBuffer", err);
    }
    dev_buf_release(&sg);
    if (s != CLS_OK) return s;
    memcpy(counts, e->h_out, (size_t)nq * 4);
    memcpy(out_docs, e->h_out + ABI_OUT_DOC((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    memcpy(out_scores, e->h_out + ABI_OUT_SCORE((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    return CLS_OK;
}
