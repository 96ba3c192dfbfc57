/* Test hooks (kernel_hooks.h): decode_blocks and the top-k stage alone, through the executor's own
 * launch functions (src/algo/decode.c, src/algo/topk.c). */
#include "kernel_hooks.h"

#include <stdlib.h>
#include <string.h>

#include "algo/decode.h"
#include "algo/topk.h"
#include "engine/dev_engine.h"
#include "engine/plan.h"
#include "util/err.h"
#include "util/vec.h"

cls_status clx_test_decode(clx_engine *e, const uint32_t *words, uint64_t nwords, const idx_block *blocks, uint32_t n,
                           uint32_t *docs, uint32_t *freqs)
{
    dbuf w = {0}, bl = {0}, tk = {0};
    abi_task *tasks = malloc(((size_t)n + 1) * sizeof *tasks);
    if (!tasks) return err_set(CLS_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) tasks[i] = (abi_task){.block = i, .dst = i * e->idx->block_size};
    size_t outb = (size_t)n * e->idx->block_size * 4;
    cls_status s;
    if ((s = dev_upload(&e->dc, &w, words, (size_t)nwords * 4 + 4, "words")) == CLS_OK &&
        (s = dev_upload(&e->dc, &bl, blocks, (size_t)n * sizeof *blocks, "blocks")) == CLS_OK &&
        (s = dev_upload(&e->dc, &tk, tasks, (size_t)n * sizeof *tasks, "tasks")) == CLS_OK &&
        (s = dev_buf_need(&e->dc, &e->docs, outb, "docs")) == CLS_OK &&
        (s = dev_buf_need(&e->dc, &e->freqs, outb, "freqs")) == CLS_OK) {
        s = decode_run(&e->dc, e->idx->block_size, w.mem, bl.mem, tk.mem, 0, n, e->docs.mem, e->freqs.mem, "decode");
        cl_int r1 = CL_SUCCESS, r2 = CL_SUCCESS;
        if (s == CLS_OK && outb) {
            r1 = clEnqueueReadBuffer(e->dc.queue, e->docs.mem, CL_TRUE, 0, outb, docs, 0, NULL, NULL);
            r2 = clEnqueueReadBuffer(e->dc.queue, e->freqs.mem, CL_TRUE, 0, outb, freqs, 0, NULL, NULL);
        }
        if (s == CLS_OK && (r1 != CL_SUCCESS || r2 != CL_SUCCESS)) s = clx_fail("clEnqueueReadBuffer", r1 ? r1 : r2);
    }
    dev_profile_collect(&e->dc, 0);
    dev_buf_release(&w);
    dev_buf_release(&bl);
    dev_buf_release(&tk);
    free(tasks);
    return s;
}

/* The top-k stage over nq groups at k from keys (and, for segments, docs and seg), into counts,
 * docIDs and scores. */
static cls_status run_topk(clx_engine *e, topk_input *in, dbuf *keys, dbuf *ids, dbuf *seg, uint32_t nq, uint32_t k,
                           uint32_t *counts, uint32_t *out_docs, float *out_scores)
{
    size_t out_len = ABI_OUT_WORDS((size_t)nq, k);
    cls_status s = dev_buf_need(&e->dc, &e->out, out_len * 4, "results");
    if (s == CLS_OK && !vec_reserve(&e->h_out, &e->h_out_cap, out_len + 1, 4)) s = err_set(CLS_E_NOMEM, "out of memory");
    if (s == CLS_OK) {
        in->scores = keys->mem;
        in->cand_docs = ids->mem ? ids->mem : keys->mem;
        in->seg = seg ? seg->mem : NULL;
        s = topk_run(&e->topk, in, nq, e->out.mem, "topk");
    }
    dev_profile_collect(&e->dc, 0);
    if (s == CLS_OK) {
        cl_int err = clEnqueueReadBuffer(e->dc.queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL);
        if (err != CL_SUCCESS) s = clx_fail("clEnqueueReadBuffer", err);
    }
    if (s != CLS_OK) return s;
    memcpy(counts, e->h_out, (size_t)nq * 4);
    memcpy(out_docs, e->h_out + ABI_OUT_DOC((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    memcpy(out_scores, e->h_out + ABI_OUT_SCORE((size_t)nq, k, 0, 0), (size_t)nq * k * 4);
    return CLS_OK;
}

cls_status clx_test_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, uint32_t *counts,
                         uint32_t *docs, float *out_scores)
{
    dbuf rows = {0}, none = {0};
    topk_input in = {.dense = 1, .num_docs = N, .kk = k, .P = plan_scratch(k)};
    cls_status s = dev_upload(&e->dc, &rows, scores, (size_t)nq * N * 4, "scores");
    if (s == CLS_OK) s = run_topk(e, &in, &rows, &none, NULL, nq, k, counts, docs, out_scores);
    dev_buf_release(&rows);
    return s;
}

void clx_test_topk_force(clx_engine *e, int force)
{
    e->topk.force = force == TEST_TOPK_SELECT       ? TOPK_FORCE_SELECT
                   : force == TEST_TOPK_ROWS_LEAST ? TOPK_FORCE_ROWS_LEAST
                   : force == TEST_TOPK_ROWS       ? TOPK_FORCE_ROWS
                   : force == TEST_TOPK_WIDE_SELECT ? TOPK_FORCE_WIDE_SELECT
                                                   : TOPK_FORCE_NONE;
}
const char *clx_test_topk_ran(const clx_engine *e) { return e->topk.ran; }
uint32_t clx_test_topk_rows_cap(const clx_engine *e, uint32_t N, uint32_t k) { return topk_rows_cap(&e->topk, N, k); }
int clx_test_topk_team_fits(const clx_engine *e, uint32_t N, uint32_t k) { return topk_team_fits(&e->topk, N, k); }
uint32_t clx_test_compute_units(const clx_engine *e) { return e->dc.dev.info.compute_units; }

cls_status clx_test_topk_seg(clx_engine *e, const uint32_t *keys, const uint32_t *docs, uint64_t n, const uint32_t *seg,
                             uint32_t nq, uint32_t k, uint32_t *counts, uint32_t *out_docs, float *out_scores)
{
    dbuf kb = {0}, db = {0}, sg = {0};
    topk_input in = {.dense = 0, .num_docs = 1, .kk = k, .P = plan_scratch(k)};
    cls_status s = dev_upload(&e->dc, &kb, keys, (size_t)n * 4 + 4, "keys");
    if (s == CLS_OK) s = dev_upload(&e->dc, &db, docs, (size_t)n * 4 + 4, "docIDs");
    if (s == CLS_OK) s = dev_upload(&e->dc, &sg, seg, (size_t)nq * 8, "segments");
    if (s == CLS_OK) s = run_topk(e, &in, &kb, &db, &sg, nq, k, counts, out_docs, out_scores);
    dev_buf_release(&kb);
    dev_buf_release(&db);
    dev_buf_release(&sg);
    return s;
}
