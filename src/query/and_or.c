/* AND-OR (-m and-or; Ding et al.'s AND-then-OR): the documents holding every query term, ranked
 * by BM25, completed when there are fewer than k of them by the best other documents holding any
 * term. The AND results come first whatever their scores, so a run's scores need not descend at
 * the boundary between the two.
 *
 * Device (cl/and_or.cl): intersect_and (and.cl) and score_or (or.cl), then mark_and flags the
 * intersection's documents in the dense row as a higher tier (cl/abi.h: ABI_KEY_TIER); top-k
 * ranks tier, then score, then docID. Reference: every document any term holds, tier 1 when
 * every term holds it. */
#include "device/dev.h"
#include "query/algo.h"

static void need(const batch_query *q, uint32_t shortest_df, algo_need *n)
{
    uint32_t flags = q->num_terms == 0 ? ABI_QF_EMPTY : q->unknown > 0 ? ABI_QF_UNKNOWN_TERM : 0u;
    *n = (algo_need){.flags = flags, .cand = flags ? 0 : shortest_df, .dense = 1};
}

static cls_status launch(dev_batch *b)
{
    clx_engine *e = b->e;
    cls_status s;
    if ((s = algo_and_intersect(b)) != CLS_OK || (s = algo_or_accumulate(b)) != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->units_base), DEV_MEM(e->cand.mem),
                   DEV_MEM(e->ucount.mem), DEV_U32(b->num_docs),     DEV_MEM(e->acc.mem)};
    b->scores = e->acc.mem;
    b->cand_docs = e->cand.mem; /* unused for dense rows */
    b->dense = 1;
    return dev_run(e, "mark_and", a, b->nunits, e->prm.wg_score, "mark");
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0, all = rq->q->unknown ? UINT32_MAX : rq->q->num_terms;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] > 0) out[n++] = (ref_hit){.s = rq->acc[d], .d = d, .tier = rq->count[d] == all};
    return n;
}

static const char *const kernels[] = {"mark_and", NULL};

const query_algo algo_and_or = {
    .name = "and-or",
    .help = "AND, completed by OR when fewer than k documents hold every term",
    .kernel_file = "and_or.cl",
    .kernels = kernels,
    .describe = "intersect_and + score_or + mark_and (AND tier first)",
    .need = need,
    .launch = launch,
    .ref = ref,
};
