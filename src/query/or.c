/* OR (-m or): every document holding any query term, ranked by its BM25 sum.
 *
 * Device (cl/or.cl): score_or, one work-group per query, adds each term's contributions into a
 * dense row of num_docs floats, term by term in query order; top-k reads the row.
 * Reference: the documents that any term's list holds, with the accumulated sum. */
#include "device/dev.h"
#include "query/algo.h"

static void need(const batch_query *q, uint32_t shortest_df, algo_need *n)
{
    (void)shortest_df;
    *n = (algo_need){.flags = q->num_terms == 0 ? ABI_QF_EMPTY : 0u, .dense = 1};
}

cls_status algo_or_accumulate(dev_batch *b)
{
    clx_engine *e = b->e;
    dev_arg a[] = {DEV_MEM(b->in),        DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(e->docs.mem),
                   DEV_MEM(e->freqs.mem), DEV_MEM(e->d_norms),      DEV_U32(b->num_docs),   DEV_MEM(e->acc.mem)};
    return dev_run(e, "score_or", a, 8, b->nq, e->prm.wg_score, "score");
}

static cls_status launch(dev_batch *b)
{
    b->scores = b->e->acc.mem;
    b->cand_docs = b->e->cand.mem; /* unused for dense rows */
    b->dense = 1;
    return algo_or_accumulate(b);
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] > 0) out[n++] = (ref_hit){.s = rq->acc[d], .d = d};
    return n;
}

static const char *const kernels[] = {"score_or", NULL};

const query_algo algo_or = {
    .name = "or",
    .help = "documents holding any query term, ranked by BM25",
    .kernel_file = "or.cl",
    .kernels = kernels,
    .describe = "dense-accumulator score_or",
    .need = need,
    .launch = launch,
    .ref = ref,
};
