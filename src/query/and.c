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
#include "device/dev.h"
#include "query/algo.h"

static void need(const batch_query *q, uint32_t shortest_df, algo_need *n)
{
    int empty = q->num_terms == 0 || q->unknown > 0;
    *n = (algo_need){.flags = empty ? ABI_QF_EMPTY : 0u, .cand = shortest_df, .skip = 1};
}

cls_status algo_and_units(dev_batch *b)
{
    clx_engine *e = b->e;
    cl_uint bs = e->idx->block_size, chunk = e->chunk;
    dev_arg a[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_U32(b->skips_base),
                   DEV_U32(b->units_base), DEV_U32(b->nunits),     DEV_MEM(e->d_blocks),   DEV_MEM(e->stasks.mem),
                   DEV_MEM(e->nsel.mem), DEV_U32(bs),              DEV_U32(chunk)};
    size_t wg = e->prm.wg_intersect;
    return dev_run(e, "plan_units", a, (b->nunits + wg - 1) / wg, wg, "plan");
}

cls_status algo_and_intersect(dev_batch *b)
{
    clx_engine *e = b->e;
    cls_status s = algo_and_units(b);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(e->docs.mem),
                   DEV_MEM(e->cand.mem),   DEV_MEM(e->ucount.mem),   DEV_U32(b->skips_base), DEV_MEM(e->d_blocks),
                   DEV_MEM(e->stasks.mem), DEV_MEM(e->nsel.mem),     DEV_U32(b->units_base)};
    return dev_run(e, "intersect_and", a, b->nunits, e->prm.wg_intersect, "intersect");
}

/* Block skipping: choose the blocks of the skipped lists, then decode them. */
static cls_status skip_and_decode(dev_batch *b)
{
    clx_engine *e = b->e;
    cl_uint bs = e->idx->block_size;
    dev_arg a[] = {DEV_MEM(b->in),     DEV_U32(b->queries_base), DEV_U32(b->terms_base),  DEV_U32(b->skips_base),
                   DEV_MEM(e->d_blocks), DEV_MEM(e->docs.mem),   DEV_U32(bs),             DEV_MEM(e->stasks.mem),
                   DEV_MEM(e->nsel.mem), DEV_MEM(e->out.mem),    DEV_U32(b->nsel_at)};
    cls_status s = dev_run(e, "select_blocks", a, b->nskips, e->prm.wg_intersect, "select");
    if (s == CLS_OK) s = dev_decode(e, e->d_words, e->d_blocks, e->stasks.mem, 0, b->nstasks, "decode");
    return s;
}

static cls_status launch(dev_batch *b)
{
    clx_engine *e = b->e;
    cls_status s = b->nskips ? skip_and_decode(b) : CLS_OK;
    if (s == CLS_OK) s = algo_and_units(b);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(e->docs.mem),
                   DEV_MEM(e->freqs.mem),  DEV_MEM(e->d_norms),      DEV_MEM(e->cand.mem),   DEV_MEM(e->cscore.mem),
                   DEV_U32(b->skips_base), DEV_MEM(e->d_blocks),     DEV_MEM(e->stasks.mem), DEV_MEM(e->nsel.mem),
                   DEV_U32(b->units_base), DEV_U32(b->nunits),       DEV_MEM(e->useg.mem),   DEV_MEM(e->qseg.mem),
                   DEV_U32(b->kk)};
    if ((s = dev_run(e, "match_and", a, b->nunits, e->prm.wg_intersect, "match")) != CLS_OK) return s;
    /* Top-k in two levels (topk.cl): each unit's candidates into the first level's output (key 0
     * past a unit's hits); then the engine ranks each query over its units' results. */
    dev_batch units = *b;
    dev_segments(&units, e->cscore.mem, e->cand.mem, e->useg.mem, 0);
    if ((s = dev_topk(e, &units, b->nunits, e->l1.mem, "topk")) != CLS_OK) return s;
    dev_segments(b, e->l1.mem, e->l1.mem, e->qseg.mem, b->nunits * b->kk);
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
    .need = need,
    .launch = launch,
    .ref = ref,
};
