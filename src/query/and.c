/* AND (-m and): the documents holding every query term, ranked by BM25. A query with a term the
 * index lacks matches nothing.
 *
 * Device (cl/and.cl): intersect_and, one work-group per query, keeps the documents of the
 * query's shortest decoded list that binary search finds in every other list, in docID order;
 * score_and sums each candidate's contributions in query-term order; top-k reads the scored
 * candidates. Reference: the documents every term's list holds, with the accumulated sum. */
#include "device/dev.h"
#include "query/algo.h"

static void need(const batch_query *q, uint32_t shortest_df, algo_need *n)
{
    int empty = q->num_terms == 0 || q->unknown > 0;
    *n = (algo_need){.flags = empty ? ABI_QF_EMPTY : 0u, .cand = shortest_df};
}

cls_status algo_and_intersect(dev_batch *b)
{
    clx_engine *e = b->e;
    dev_arg a[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base),
                   DEV_MEM(e->docs.mem), DEV_MEM(e->cand.mem),     DEV_MEM(e->ncand.mem)};
    return dev_run(e, "intersect_and", a, 6, b->nq, e->prm.wg_intersect, "intersect");
}

static cls_status launch(dev_batch *b)
{
    clx_engine *e = b->e;
    cls_status s = algo_and_intersect(b);
    if (s != CLS_OK) return s;
    dev_arg a[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(e->docs.mem),
                   DEV_MEM(e->freqs.mem), DEV_MEM(e->d_norms),     DEV_MEM(e->cand.mem),   DEV_MEM(e->ncand.mem),
                   DEV_MEM(e->cscore.mem)};
    b->scores = e->cscore.mem;
    b->cand_docs = e->cand.mem;
    b->dense = 0;
    return dev_run(e, "score_and", a, 9, b->nq, e->prm.wg_score, "score");
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0, all = rq->q->num_terms;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] == all) out[n++] = (ref_hit){.s = rq->acc[d], .d = d};
    return n;
}

static const char *const kernels[] = {"intersect_and", "score_and", NULL};

const query_algo algo_and = {
    .name = "and",
    .help = "documents holding every query term, ranked by BM25",
    .kernel_file = "and.cl",
    .kernels = kernels,
    .describe = "workgroup-per-query binary-search intersect_and + score_and",
    .need = need,
    .launch = launch,
    .ref = ref,
};
