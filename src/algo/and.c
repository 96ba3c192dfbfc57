/* AND (-m and): the documents holding every query term, ranked by BM25. A query with a term the
 * index lacks matches nothing.
 *
 * Device (cl/and.cl): the planner decodes each query's driving (shortest) list whole and gives
 * every other list of more than one block a region of its own (block skipping, Ding et al.), and
 * where it may prune, the list of a one-term query too (block-max pruning); select_blocks picks
 * the blocks of those regions and a second decode_blocks decodes only those. plan_units splits
 * each driving list, as long as the device has it, into work units; match_and, one work-group
 * per unit, keeps the driving list's documents found in every other list with their BM25 sums;
 * top-k runs per unit, then per query. Reference: the documents every term's list holds, with
 * the accumulated sum. */
#include <stdlib.h>

#include "algo/and.h"
#include "algo/decode.h"
#include "util/err.h"

void and_bufs_init(and_bufs *x, const algo_env *env)
{
    x->chunk = env->dc ? AND_CHUNK_STEPS * env->dc->prm.wg_intersect : UINT32_MAX;
}

uint32_t and_units_for(const and_bufs *x, uint32_t cand)
{
    return cand ? (uint32_t)(((uint64_t)cand + x->chunk - 1) / x->chunk) : 1;
}

void and_set_chunk(void *state, uint32_t candidates) { ((and_bufs *)state)->chunk = candidates ? candidates : 1; }

cls_status and_bufs_size(and_bufs *x, const algo_batch *b)
{
    dev_ctx *dc = b->dc;
    cls_status s;
    if ((s = dev_buf_need(dc, &x->stasks, (size_t)b->nstasks * sizeof(abi_task), "selected blocks")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->nsel, (size_t)b->nskips * 4, "selected block counts")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->cand, (size_t)b->cand * 4, "candidates")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->cscore, (size_t)b->cand * 4, "candidate scores")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->ucount, (size_t)b->nunits * 4, "candidates per work unit")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->useg, (size_t)b->nunits * 8, "top-k segments")) != CLS_OK ||
        (s = dev_buf_need(dc, &x->qseg, (size_t)b->nq * 8, "top-k segments")) != CLS_OK ||
        (b->two_level &&
         (s = dev_buf_need(dc, &x->l1, ABI_OUT_WORDS((size_t)b->nunits, b->kk) * 4, "first-level top-k")) != CLS_OK))
        return s;
    return CLS_OK;
}

void and_bufs_free(and_bufs *x)
{
    dbuf *bufs[] = {&x->stasks, &x->nsel, &x->cand, &x->cscore, &x->ucount, &x->useg, &x->qseg, &x->l1};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
}

cls_status and_units(and_bufs *x, algo_batch *b)
{
    cl_uint bs = b->idx->block_size, chunk = x->chunk;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_U32(b->skips_base),
                   DEV_U32(b->units_base), DEV_U32(b->nunits),       DEV_MEM(b->blocks),     DEV_MEM(x->stasks.mem),
                   DEV_MEM(x->nsel.mem),   DEV_U32(bs),              DEV_U32(chunk)};
    size_t wg = b->dc->prm.wg_intersect;
    return dev_run(b->dc, "plan_units", a, (b->nunits + wg - 1) / wg, wg, "plan");
}

cls_status and_intersect(and_bufs *x, algo_batch *b)
{
    cls_status s = and_units(x, b);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(b->docs),
                   DEV_MEM(x->cand.mem),   DEV_MEM(x->ucount.mem),   DEV_U32(b->skips_base), DEV_MEM(b->blocks),
                   DEV_MEM(x->stasks.mem), DEV_MEM(x->nsel.mem),     DEV_U32(b->units_base)};
    return dev_run(b->dc, "intersect_and", a, b->nunits, b->dc->prm.wg_intersect, "intersect");
}

static cls_status create(const algo_env *env, void **state)
{
    and_bufs *x = calloc(1, sizeof *x);
    if (!x) return err_set(CLS_E_NOMEM, "out of memory for AND's state");
    and_bufs_init(x, env);
    *state = x;
    return CLS_OK;
}

static void destroy(void *state)
{
    if (!state) return;
    and_bufs_free(state);
    free(state);
}

static void need(const void *state, const algo_query *aq, algo_need *n)
{
    int empty = aq->q->num_terms == 0 || aq->q->unknown > 0;
    uint32_t cand = empty ? 0 : aq->shortest_df;
    *n = (algo_need){.flags = empty ? ABI_QF_EMPTY : 0u, .cand = cand, .skip = 1,
                     .units = state ? and_units_for(state, cand) : 1};
}

/* Block skipping: choose the blocks of the skipped lists (their count into the word after the
 * results, which collect reads), then decode them. */
static cls_status skip_and_decode(and_bufs *x, algo_batch *b)
{
    dev_ctx *dc = b->dc;
    cl_uint bs = b->idx->block_size, nsel_at = b->extra_at, zero = 0;
    cl_event ev;
    CLX_TRY(clEnqueueFillBuffer(dc->queue, b->out, &zero, 4, (size_t)nsel_at * 4, 4, 0, NULL, &ev));
    cls_status s = dev_record_fill(dc, ev, "select");
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_U32(b->skips_base),
                   DEV_MEM(b->blocks),   DEV_MEM(b->docs),         DEV_U32(bs),            DEV_MEM(x->stasks.mem),
                   DEV_MEM(x->nsel.mem), DEV_MEM(b->out),          DEV_U32(nsel_at)};
    s = dev_run(dc, "select_blocks", a, b->nskips, dc->prm.wg_intersect, "select");
    if (s == CLS_OK) s = decode_run(dc, bs, b->words, b->blocks, x->stasks.mem, 0, b->nstasks, b->docs, b->freqs, "decode");
    return s;
}

static cls_status launch(void *state, algo_batch *b)
{
    and_bufs *x = state;
    cls_status s = and_bufs_size(x, b);
    if (s == CLS_OK && b->nskips) s = skip_and_decode(x, b);
    if (s == CLS_OK) s = and_units(x, b);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(b->docs),
                   DEV_MEM(b->freqs),      DEV_MEM(b->norms),        DEV_MEM(x->cand.mem),   DEV_MEM(x->cscore.mem),
                   DEV_U32(b->skips_base), DEV_MEM(b->blocks),       DEV_MEM(x->stasks.mem), DEV_MEM(x->nsel.mem),
                   DEV_U32(b->units_base), DEV_U32(b->nunits),       DEV_MEM(x->useg.mem),   DEV_MEM(x->qseg.mem),
                   DEV_U32(b->kk)};
    if ((s = dev_run(b->dc, "match_and", a, b->nunits, b->dc->prm.wg_intersect, "match")) != CLS_OK) return s;
    /* Top-k in two levels: each unit's candidates into the first level's output (key 0 past a
     * unit's hits); then the batch's top-k stage ranks each query over its units' results. */
    topk_input units = b->rank;
    topk_segments(&units, x->cscore.mem, x->cand.mem, x->useg.mem, 0);
    if ((s = topk_run(b->topk, &units, b->nunits, x->l1.mem, "topk")) != CLS_OK) return s;
    topk_segments(&b->rank, x->l1.mem, x->l1.mem, x->qseg.mem, b->nunits * b->kk);
    return CLS_OK;
}

/* select_blocks' count of the blocks it chose, where lists were skipped */
static uint32_t extra_words(const void *state, const algo_batch *b)
{
    (void)state;
    return b->nskips ? 1 : 0;
}

static cls_status collect(void *state, const algo_batch *b, const uint32_t *extra, uint64_t *blocks_decoded,
                          cls_counter *counters)
{
    (void)state;
    (void)counters;
    if (b->nskips) *blocks_decoded += extra[0];
    return CLS_OK;
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0, all = rq->q->num_terms;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] == all) out[n++] = (ref_hit){.s = rq->acc[d], .d = d};
    return n;
}

static const char *const kernels[] = {"select_blocks", "plan_units", "match_and", "intersect_and", NULL};

const query_algo algo_and = {
    .name = "and",
    .help = "documents holding every query term, ranked by BM25",
    .kernel_file = "and.cl",
    .kernels = kernels,
    .describe = "select_blocks (block skipping, block-max pruning of one-term queries) + plan_units + match_and (intersect and score, work units) + two-level top-k",
    .create = create,
    .free = destroy,
    .need = need,
    .launch = launch,
    .extra_words = extra_words,
    .collect = collect,
    .ref = ref,
};
