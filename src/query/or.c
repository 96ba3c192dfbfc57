/* OR (-m or): every document holding any query term, ranked by its BM25 sum.
 *
 * Device (cl/or_parts.cl, whose header gives the algorithm and why it is exact): each list of the
 * batch is decoded once (or_expand, or_decode), for every query that gives its term the same
 * weight (the planner's abi_olists), into contributions and places within partitions; the docID
 * space is cut into partitions of OR_PART documents; each query's partitions are bounded from its
 * lists' block heads (or_bounds, or_plan), the highest-bounded ones scored first (the seeds),
 * the others scored only where their bound reaches the query's rising threshold (or_rest, then
 * persistent or_score in rounds, within a partition only the essential terms' postings read
 * first (MaxScore), the threshold raised to the k-th best of the query's pool after
 * the seeds and each round: or_pool_theta), each in local-memory accumulators, reading only the
 * blocks that can matter; each partition offers at most k candidates at or above the threshold
 * to its query's pool, and topk_select ranks the pool. Nothing the size of the collection exists
 * per query; the decoded lists are 6 bytes a posting, sized with the batch (plan.c).
 *
 * The rule: partitions where the collection has more than 2^OR_DENSE_LOG documents (a tuned
 * parameter, clx_params.c; clx_search applies it, -v names the way taken), else the dense row of
 * score_or (or.cl), as and-or ranks it. A dense row costs num_docs floats zeroed, written and
 * ranked per query: 100 MB a query at 25 M documents; on the H100 the dense row wins up to 16,384
 * documents, partitions from 262,144, and 65,536 is the crossover (docs/PERFORMANCE.md, "Ranked
 * OR"). The CPU device keeps the same default: the row for collections of up to 65,536
 * documents, its usual work, where POCL compiles no partition kernel (the partition program
 * takes it about a minute on the 2-core development machine: a first search of 200 topics on
 * 100,000 documents with partitions forced took 56 s with bp, 67 with rice, 89 with pfor, nearly
 * all of it compiling). Tests force
 * partitions (clx_set_or_partitions); CLSEARCH_PARAMS=OR_DENSE_LOG=0 or 32 forces either way.
 *
 * Within partitions, the rule per query (the planner applies it, plan.c; -v states it): a query
 * whose lists hold at most OR_HASH_RATIO postings per partition of the collection together (a
 * tuned parameter, 32) is hashed (or_hash: a work-group per share of about 4,096 of its
 * postings, its documents in a hash table of its own; or_hash_offer: its k best to its pool),
 * the others are scored by partitions. The cost estimate behind it: a partition costs a group's
 * pass, microseconds of loads and barriers however few postings it holds, and a query meets
 * about one partition a posting, up to all np of them; hashing costs a few loads and an atomic
 * a posting, with no pass per partition but no pruning either. So a query's partitions cost
 * about min(np, postings) passes and its hashing about postings / R passes' worth: hashing wins
 * below R postings a partition, for some R the device decides. Measured on the H100
 * (docs/PERFORMANCE.md, "Ranked OR: hashing or partitions"), batches of 4,096: R 32 takes gov2
 * (6,154 partitions, 3,115 of 4,096 queries hashed) from 23,983 to 27,787 queries/s at k 10 and
 * from 16,721 to 20,567 at k 1000, the 1M collection (245 partitions) from 285,692 to 356,582
 * and from 96,545 to 126,496; on gov2, R 16 and 64 are within 1.5% of it, on 1M slower by 5 to
 * 11%. A bound in postings alone (2^16,
 * the same for both) slowed the 1M collection by 27% at k 10, where a query meets at most 245
 * partitions.
 *
 * Reference: the documents that any term's list holds, with the accumulated sum. */
#include <assert.h>
#include <string.h>

#include "device/dev.h"
#include "query/algo.h"

static void need(const batch_query *q, uint32_t shortest_df, algo_need *n)
{
    (void)shortest_df;
    *n = (algo_need){.flags = q->num_terms == 0 ? ABI_QF_EMPTY : 0u, .parts = 1};
}

/* score_or, the dense accumulation and-or ranks (cl/or.cl). */
cls_status algo_or_accumulate(dev_batch *b)
{
    clx_engine *e = b->e;
    dev_arg a[] = {DEV_MEM(b->in),        DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(e->docs.mem),
                   DEV_MEM(e->freqs.mem), DEV_MEM(e->d_norms),      DEV_U32(b->num_docs),   DEV_MEM(e->acc.mem)};
    return dev_run(e, "score_or", a, b->nq, e->prm.wg_score, "score");
}

/* Persistent work-groups of or_score's queue pass, per compute unit: enough resident groups to
 * hide a group's barriers and loads. */
#define OR_GROUPS_PER_CU 16u
/* or_bounds' work-groups per compute unit where a batch has few terms */
#define OR_BOUND_GROUPS_PER_CU 8u
/* The queue pass's rounds (cl/abi.h: ABI_OR_ROUND_FROM, 64, 512, 4096): where each launch of
 * or_score ends in every query's queue (the last takes the rest), or_pool_theta raising each
 * query's theta to the k-th best of its pool in between.
 * Each round's bound is eight times the last's, so a query whose histogram cannot raise theta
 * (or_parts.cl: or_pool_theta) offers a few thousand candidates a round instead of nearly every
 * document it matches: on gov2 at k 1000 the largest pool went from 5.6 million candidates to
 * 33,181, and 4,096 topics from 9,427 to 12,217 q/s on the H100 (docs/PERFORMANCE.md). */

/* or_score's arguments, in the order of the kernel's parameters (cl/or_parts.cl: or_score): the
 * seeds' launch sets them all, the queue pass's rounds patch some by name. */
enum {
    ORS_IN, ORS_QINFO_BASE, ORS_QTERM_BASE, ORS_SKIPS_BASE, ORS_BLOCKS, ORS_BMAX, ORS_BSRC, ORS_NP, ORS_K, ORS_POOL,
    ORS_M, ORS_UB, ORS_ITEMS, ORS_SEEDS, ORS_PERSISTENT, ORS_NQ, ORS_CTL, ORS_GBASE, ORS_PDOC, ORS_PKEY, ORS_HIST,
    ORS_C, ORS_O, ORS_S, ORS_FROM, ORS_TO, ORS_ACT, ORS_ROUND,
    ORS_NARGS
};

static cls_status launch(dev_batch *b)
{
    clx_engine *e = b->e;
    const batch_plan *pl = b->pl;
    if (!pl->parts) { /* a small collection: the dense row (clx_search's rule) */
        b->scores = e->acc.mem;
        b->cand_docs = e->cand.mem; /* unused for dense rows */
        b->dense = 1;
        return algo_or_accumulate(b);
    }
    cl_uint nq = b->nq, np = pl->lim.parts, seeds = pl->lim.seeds, pool = pl->lim.pool, kk = b->kk;
    /* or_score reads term i's abi_skip at index i: every term of a parts batch has one, in order */
    assert(b->nskips == pl->nterms);
    cl_uint gbase = ABI_OR_CTL_BATCH(nq), bsrc = e->or_bsrc, bs = e->idx->block_size, zero = 0, one = 1;
    cls_status s;
    if ((s = dev_buf_need(e, &e->or_m, (size_t)pl->nterms * np * 4, "partition bounds")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_tasks, (size_t)b->otasks * sizeof(abi_task), "decode tasks")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_c, (size_t)b->otasks * bs * 4, "decoded contributions")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_o, (size_t)b->otasks * bs * 2, "decoded offsets")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_s, (size_t)b->nolists * (np + 1) * 4, "partitions' first slots")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_ub, (size_t)nq * np * 4, "partition bounds")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_items, (size_t)nq * np * 4, "partition queue")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_seed, (size_t)nq * seeds * 4, "seed partitions")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_ctl, ((size_t)gbase + ABI_OR_CTL_BATCH_WORDS) * 4, "partition counters")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_act, (size_t)nq * ABI_OR_ROUNDS * 4, "queries of each round")) != CLS_OK ||
        (s = dev_buf_need(e, &e->or_hist, (size_t)nq * ABI_OR_HIST * 4, "candidate histograms")) != CLS_OK ||
        (s = dev_buf_need(e, &e->cand, (size_t)nq * pool * 4, "candidates")) != CLS_OK ||
        (s = dev_buf_need(e, &e->cscore, (size_t)nq * pool * 4, "candidate scores")) != CLS_OK)
        return s;
    cl_event ev;
    CLX_TRY(clEnqueueFillBuffer(e->queue, e->or_m.mem, &zero, 4, 0, (size_t)pl->nterms * np * 4, 0, NULL, &ev));
    if ((s = dev_record_fill(e, ev, "bounds")) != CLS_OK) return s;
    CLX_TRY(clEnqueueFillBuffer(e->queue, e->or_ctl.mem, &zero, 4, (size_t)gbase * 4, ABI_OR_CTL_BATCH_WORDS * 4, 0, NULL,
                                &ev));
    if ((s = dev_record_fill(e, ev, "bounds")) != CLS_OK) return s;
    CLX_TRY(clEnqueueFillBuffer(e->queue, e->or_hist.mem, &zero, 4, 0, (size_t)nq * ABI_OR_HIST * 4, 0, NULL, &ev));
    if ((s = dev_record_fill(e, ev, "bounds")) != CLS_OK) return s;
    cl_uint nwords;
    if ((s = dev_words_count(e->d_words, &nwords)) != CLS_OK) return s;
    /* the batch's lists, each decoded once into contributions at its weight (or_decode) */
    dev_arg ax[] = {DEV_MEM(b->in), DEV_U32(b->olists_base), DEV_MEM(e->or_tasks.mem)};
    if ((s = dev_run(e, "or_expand", ax, b->nolists, bs, "decode")) != CLS_OK) return s;
    dev_arg ad[] = {DEV_MEM(e->d_words), DEV_U32(nwords),          DEV_MEM(e->d_blocks),   DEV_MEM(e->d_norms),
                    DEV_MEM(b->in),      DEV_U32(b->olists_base),  DEV_MEM(e->or_tasks.mem), DEV_U32(np),
                    DEV_MEM(e->or_c.mem), DEV_MEM(e->or_o.mem),    DEV_MEM(e->or_s.mem)};
    if ((s = dev_run(e, "or_decode", ad, b->otasks, bs, "decode")) != CLS_OK) return s;
    /* or_bounds' groups per term: a batch of few terms still gives the device OR_BOUND_GROUPS_PER_CU
     * groups a compute unit (a query alone on gov2 has a few lists of up to 195,000 blocks), none
     * with fewer than a group's width of blocks to take */
    uint32_t most = 0;
    for (uint32_t i = 0; i < b->nskips; i++)
        if (pl->skips[i].num_blocks > most) most = pl->skips[i].num_blocks;
    size_t want = (size_t)e->dev.info.compute_units * OR_BOUND_GROUPS_PER_CU;
    cl_uint ways = b->nskips && b->nskips < want ? (cl_uint)((want + b->nskips - 1) / b->nskips) : 1;
    if (ways > (most + bs - 1) / bs) ways = (most + bs - 1) / bs;
    if (e->bound_ways) ways = e->bound_ways;
    if (ways < 1) ways = 1;
    dev_arg ab[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_U32(b->skips_base),
                    DEV_MEM(e->d_blocks), DEV_MEM(e->d_bmax),       DEV_U32(bsrc),          DEV_U32(np),
                    DEV_U32(ways),        DEV_MEM(e->or_m.mem)};
    if ((s = dev_run(e, "or_bounds", ab, (size_t)b->nskips * ways, bs, "bounds")) != CLS_OK) return s;
    dev_arg ap[] = {DEV_MEM(b->in),      DEV_U32(b->queries_base), DEV_U32(np),           DEV_U32(seeds),
                    DEV_MEM(e->or_m.mem), DEV_MEM(e->or_ub.mem),   DEV_MEM(e->or_seed.mem), DEV_MEM(e->or_ctl.mem)};
    if ((s = dev_run(e, "or_plan", ap, nq, bs, "bounds")) != CLS_OK) return s;
    if (pl->nhash) { /* the queries of few postings: each in a hash table of its own (the rule above),
                      * a group a unit (a share of its partitions), then their k best to the pool */
        if ((s = dev_buf_need(e, &e->or_htab, (size_t)pl->hwords * 4, "hash tables")) != CLS_OK) return s;
        cl_uint hw = (cl_uint)pl->hwords; /* a multiple of 512: tables of 2^8 entries and more */
        dev_arg ac[] = {DEV_U32(hw), DEV_MEM(e->or_htab.mem)};
        if ((s = dev_run(e, "or_hash_clear", ac, (hw / 4 + 255) / 256, 256, "hash")) != CLS_OK) return s;
        dev_arg ah[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->skips_base), DEV_U32(b->units_base),
                        DEV_MEM(e->d_blocks),   DEV_U32(np),              DEV_MEM(e->or_c.mem),   DEV_MEM(e->or_o.mem),
                        DEV_MEM(e->or_s.mem),   DEV_MEM(e->or_htab.mem)};
        if ((s = dev_run(e, "or_hash", ah, b->nunits, e->or_hash_wg, "hash")) != CLS_OK) return s;
        dev_arg ao[] = {DEV_MEM(b->in),        DEV_U32(b->queries_base), DEV_U32(kk),          DEV_U32(pool),
                        DEV_MEM(e->or_ctl.mem), DEV_MEM(e->cand.mem),    DEV_MEM(e->cscore.mem), DEV_MEM(e->or_htab.mem)};
        if ((s = dev_run(e, "or_hash_offer", ao, nq, e->or_hash_wg, "hash")) != CLS_OK) return s;
    }
    dev_arg as[ORS_NARGS] = {
        [ORS_IN] = DEV_MEM(b->in),
        [ORS_QINFO_BASE] = DEV_U32(b->queries_base),
        [ORS_QTERM_BASE] = DEV_U32(b->terms_base),
        [ORS_SKIPS_BASE] = DEV_U32(b->skips_base),
        [ORS_BLOCKS] = DEV_MEM(e->d_blocks),
        [ORS_BMAX] = DEV_MEM(e->d_bmax),
        [ORS_BSRC] = DEV_U32(bsrc),
        [ORS_NP] = DEV_U32(np),
        [ORS_K] = DEV_U32(kk),
        [ORS_POOL] = DEV_U32(pool),
        [ORS_M] = DEV_MEM(e->or_m.mem),
        [ORS_UB] = DEV_MEM(e->or_ub.mem),
        [ORS_ITEMS] = DEV_MEM(e->or_seed.mem), /* the seed table first, then the queues */
        [ORS_SEEDS] = DEV_U32(seeds),
        [ORS_PERSISTENT] = DEV_U32(zero),
        [ORS_NQ] = DEV_U32(nq),
        [ORS_CTL] = DEV_MEM(e->or_ctl.mem),
        [ORS_GBASE] = DEV_U32(gbase),
        [ORS_PDOC] = DEV_MEM(e->cand.mem),
        [ORS_PKEY] = DEV_MEM(e->cscore.mem),
        [ORS_HIST] = DEV_MEM(e->or_hist.mem),
        [ORS_C] = DEV_MEM(e->or_c.mem),
        [ORS_O] = DEV_MEM(e->or_o.mem),
        [ORS_S] = DEV_MEM(e->or_s.mem),
        [ORS_FROM] = DEV_U32(zero),
        [ORS_TO] = DEV_U32(zero),
        [ORS_ACT] = DEV_MEM(e->or_act.mem),
        [ORS_ROUND] = DEV_U32(zero),
    };
    if ((s = dev_run(e, "or_score", as, (size_t)nq * seeds, bs, "seeds")) != CLS_OK) return s;
    dev_arg at[] = {DEV_U32(kk), DEV_U32(pool), DEV_MEM(e->or_ctl.mem), DEV_MEM(e->cscore.mem)};
    if ((s = dev_run(e, "or_pool_theta", at, nq, bs, "seeds")) != CLS_OK) return s;
    dev_arg ar[] = {DEV_U32(np),    DEV_MEM(e->or_ub.mem),    DEV_MEM(e->or_ctl.mem),
                    DEV_U32(gbase), DEV_MEM(e->or_items.mem), DEV_MEM(e->or_act.mem)};
    if ((s = dev_run(e, "or_rest", ar, nq, bs, "bounds")) != CLS_OK) return s;
    as[ORS_ITEMS] = DEV_MEM(e->or_items.mem);
    as[ORS_PERSISTENT] = DEV_U32(one);
    size_t groups = (size_t)e->dev.info.compute_units * OR_GROUPS_PER_CU;
    cl_uint from = 0;
    for (cl_uint r = 0; r < ABI_OR_ROUNDS && from < np; r++) {
        cl_uint to = ABI_OR_ROUND_FROM(r + 1);
        if (r) { /* the ticket counter, for this round */
            CLX_TRY(clEnqueueFillBuffer(e->queue, e->or_ctl.mem, &zero, 4, ((size_t)gbase + ABI_OR_CTL_TICKET) * 4, 4, 0,
                                    NULL, &ev));
            if ((s = dev_record_fill(e, ev, "score")) != CLS_OK) return s;
        }
        as[ORS_FROM] = DEV_U32(from);
        as[ORS_TO] = DEV_U32(to);
        as[ORS_ROUND] = DEV_U32(r);
        if ((s = dev_run(e, "or_score", as, groups, bs, "score")) != CLS_OK) return s;
        if (to < np && (s = dev_run(e, "or_pool_theta", at, nq, bs, "score")) != CLS_OK) return s;
        from = to;
    }
    cl_uint or_at = (cl_uint)ABI_OUT_OR((size_t)nq, kk);
    dev_arg af[] = {DEV_U32(nq),        DEV_U32(pool),       DEV_MEM(e->or_ctl.mem), DEV_U32(gbase),
                    DEV_MEM(e->qseg.mem), DEV_MEM(e->out.mem), DEV_U32(or_at)};
    if ((s = dev_run(e, "or_finish", af, (nq + 63) / 64, 64, "score")) != CLS_OK) return s;
    dev_segments(b, e->cscore.mem, e->cand.mem, e->qseg.mem, 0);
    return CLS_OK;
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] > 0) out[n++] = (ref_hit){.s = rq->acc[d], .d = d};
    return n;
}

static const char *const kernels[] = {"score_or", NULL};
static const char *const decode_kernels[] = {"or_expand",     "or_decode", "or_bounds", "or_plan",      "or_hash_clear", "or_hash", "or_hash_offer",
                                             "or_score",      "or_pool_theta", "or_rest", "or_finish", "block_maxima",
                                             NULL};

const query_algo algo_or = {
    .name = "or",
    .help = "documents holding any query term, ranked by BM25",
    .kernel_file = "or.cl",
    .kernels = kernels,
    .decode_file = "or_parts.cl",
    .decode_kernels = decode_kernels,
    .describe = "docID-range partitions with block-max pruning (or_expand + or_decode: each list decoded once, "
                "or_bounds + or_plan + or_score seeds + or_pool_theta, or_rest, or_score queue in rounds (essential "
                "terms first: MaxScore within a partition) + "
                "or_pool_theta + or_finish) + top-k over the candidate pool",
    .need = need,
    .launch = launch,
    .ref = ref,
};
