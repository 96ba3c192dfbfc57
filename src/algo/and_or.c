/* AND-OR (-m and-or; Ding et al.'s AND-then-OR): the documents holding every query term, ranked
 * by BM25, completed when there are fewer than k of them by the best other documents holding any
 * term. The AND results come first whatever their scores, so a run's scores need not descend at
 * the boundary between the two.
 *
 * Device (cl/and_or.cl): intersect_and (and.cl) and score_or (or.cl), then mark_and flags the
 * intersection's documents in the dense row as a higher tier (cl/abi.h: ABI_KEY_TIER); top-k
 * ranks tier, then score, then docID. Reference: every document any term holds, tier 1 when
 * every term holds it. */
#include <stddef.h>
#include <stdlib.h>

#include "algo/and.h"
#include "algo/or.h"
#include "util/err.h"

typedef struct and_or_state {
    and_bufs x;  /* the intersection (first: and_set_chunk takes the state as its and_bufs) */
    dbuf acc;    /* a dense row a query */
} and_or_state;
_Static_assert(offsetof(and_or_state, x) == 0, "and_set_chunk reads an and-or state as its and_bufs");

static cls_status create(const algo_env *env, void **state)
{
    and_or_state *st = calloc(1, sizeof *st);
    if (!st) return err_set(CLS_E_NOMEM, "out of memory for AND-OR's state");
    and_bufs_init(&st->x, env);
    *state = st;
    return CLS_OK;
}

static void destroy(void *state)
{
    and_or_state *st = state;
    if (!st) return;
    and_bufs_free(&st->x);
    dev_buf_release(&st->acc);
    free(st);
}

static void need(const void *state, const algo_query *aq, algo_need *n)
{
    const and_or_state *st = state;
    const batch_query *q = aq->q;
    uint32_t flags = q->num_terms == 0 ? ABI_QF_EMPTY : q->unknown > 0 ? ABI_QF_UNKNOWN_TERM : 0u;
    uint32_t cand = flags ? 0 : aq->shortest_df;
    *n = (algo_need){.flags = flags, .cand = cand, .dense = 1, .units = st ? and_units_for(&st->x, cand) : 1};
}

static cls_status launch(void *state, algo_batch *b)
{
    and_or_state *st = state;
    cls_status s;
    if ((s = and_bufs_size(&st->x, b)) != CLS_OK ||
        (s = dev_buf_need(b->dc, &st->acc, (size_t)b->nq * b->num_docs * 4, "accumulator rows")) != CLS_OK ||
        (s = and_intersect(&st->x, b)) != CLS_OK || (s = or_accumulate(b, st->acc.mem)) != CLS_OK)
        return s;
    dev_arg a[] = {DEV_MEM(b->in),            DEV_U32(b->queries_base), DEV_U32(b->units_base), DEV_MEM(st->x.cand.mem),
                   DEV_MEM(st->x.ucount.mem), DEV_U32(b->num_docs),     DEV_MEM(st->acc.mem)};
    topk_rows_of(&b->rank, st->acc.mem, st->x.cand.mem);
    return dev_run(b->dc, "mark_and", a, b->nunits, b->dc->prm.wg_score, "mark");
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
    .create = create,
    .free = destroy,
    .need = need,
    .launch = launch,
    .ref = ref,
};
