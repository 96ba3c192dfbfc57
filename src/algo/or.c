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
 * per query; the decoded lists are 6 bytes a posting, sized with the batch (the planner).
 *
 * The rule (prepare): partitions where the collection has more than 2^OR_DENSE_LOG documents (a
 * tuned parameter, clx_params.c; -v names the way taken), else the dense row of score_or
 * (cl/or.cl), as and-or ranks it. A dense row costs num_docs floats zeroed, written and ranked
 * per query, so it loses as collections grow, while partitions pay a fixed cost per partition that
 * small collections cannot repay; the crossover is measured per device (docs/PERFORMANCE.md,
 * "Ranked OR"). The CPU device keeps the same default, where the row serves its usual
 * collections and POCL need not compile the partition program (slow to compile on POCL). Tests
 * force partitions (or_force_partitions); CLSEARCH_PARAMS=OR_DENSE_LOG=0 or 32 forces either way.
 *
 * Within partitions, the rule per query (need; -v states it): a query whose lists hold at most
 * OR_HASH_RATIO postings per partition of the collection together (a tuned parameter) is hashed
 * (or_hash: a work-group per share of about OR_HASH_SHARE of its postings, its documents in a hash
 * table of its own; or_hash_offer: its k best to its pool), the others are scored by partitions.
 * The cost estimate behind it: a partition costs a group's pass, microseconds of loads and
 * barriers however few postings it holds, and a query meets about one partition a posting, up to
 * all np of them; hashing costs a few loads and an atomic a posting, with no pass per partition
 * but no pruning either. So a query's partitions cost about min(np, postings) passes and its
 * hashing about postings / R passes' worth: hashing wins below R postings a partition, for some R
 * the device decides (docs/PERFORMANCE.md, "Ranked OR: hashing or partitions, chosen per query").
 * A bound in postings alone, the same for every collection, loses where a query meets few
 * partitions.
 *
 * Reference: the documents that any term's list holds, with the accumulated sum. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/or.h"
#include "codec/codec.h"
#include "index/bm25.h"
#include "util/err.h"
#include "util/vec.h"

/* Hashing: postings a work-group of or_hash adds, about (cl/or_parts.cl) */
#define OR_HASH_SHARE 4096u
/* Seed partitions a query scores first, and its candidate pool. One seed per OR_SEED_HITS hits
 * kept (a partition offers at most k, and the seeds' k-th best is the first threshold); the pool
 * holds what partitions offer above a threshold that is still rising; a query that offers more
 * runs again with a pool that fits (rerun). OR_POOL_PER_HIT slots a hit: fewer let the seeds alone
 * fill the pool at large k and send queries to run again (docs/PERFORMANCE.md, "Ranked OR"). The
 * pool is 8 bytes a slot, which the batch planner counts like any buffer. */
#define OR_SEED_HITS 64u
#define OR_MAX_SEEDS 64u
#define OR_POOL_MIN 4096u
#define OR_POOL_PER_HIT 256u
/* Persistent work-groups of or_score's queue pass, per compute unit: enough resident groups to
 * hide a group's barriers and loads. */
#define OR_GROUPS_PER_CU 16u
/* or_bounds' work-groups per compute unit where a batch has few terms */
#define OR_BOUND_GROUPS_PER_CU 8u
/* Block maxima (ABI_BOUND_TABLE): block_maxima over every block, in launches of at most
 * BMAX_GROUPS work-groups. */
#define BMAX_GROUPS ((size_t)1 << 22)

static const char *const counter_names[] = {"partitions_scored", "or_bounds_from", "queries_hashed",
                                            "partition_terms_skipped", NULL};
enum { OR_C_PARTITIONS_SCORED, OR_C_BOUNDS_FROM, OR_C_QUERIES_HASHED, OR_C_TERMS_SKIPPED };

/* or_hash: eight blocks' postings a round where the device takes groups that large (larger groups
 * keep more of a share's postings in flight; docs/PERFORMANCE.md, "Ranked OR: hashing or
 * partitions, chosen per query") */
static unsigned hash_wg(uint32_t block_size, size_t max_work_group)
{
    unsigned wg = block_size;
    while (wg < 8 * block_size && wg * 2 <= max_work_group) wg *= 2;
    return wg;
}

static void decode_options(const void *state, const clx_params *prm, uint32_t block_size, size_t max_work_group,
                           char *buf, size_t len)
{
    (void)state;
    snprintf(buf, len, " -DOR_PART_LOG=%u -DOR_HASH_WG=%u -DOR_SEARCH_COST=%u", prm->or_part_log,
             hash_wg(block_size, max_work_group), prm->or_search_cost);
}

static cls_status create(const algo_env *env, void **state)
{
    or_state *st = calloc(1, sizeof *st);
    if (!st) return err_set(CLS_E_NOMEM, "out of memory for OR's state");
    st->env = *env;
    st->bmax_k1 = st->bmax_b = -1;
    if (st->env.dc) {
        const cls_device_info *di = &st->env.dc->dev.info;
        st->hash_wg = hash_wg(env->idx->block_size, di->max_work_group);
        size_t at = (size_t)snprintf(st->opts, sizeof st->opts, "%s", env->decode_opts);
        if (at < sizeof st->opts)
            decode_options(st, &st->env.dc->prm, env->idx->block_size, di->max_work_group, st->opts + at, sizeof st->opts - at);
    }
    *state = st;
    return CLS_OK;
}

static void destroy(void *state)
{
    or_state *st = state;
    if (!st) return;
    dbuf *bufs[] = {&st->m, &st->ub, &st->items, &st->seed, &st->ctl, &st->hist, &st->act, &st->tasks,
                    &st->c, &st->o, &st->s, &st->htab, &st->cand, &st->cscore, &st->qseg, &st->acc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    if (st->bmax) clReleaseMemObject(st->bmax);
    if (st->prog) clReleaseProgram(st->prog);
    free(st->retry);
    free(st);
}

/* The rule: partitions on a collection of more than 2^OR_DENSE_LOG documents (or where a test
 * forces them), else one dense row a query. */
static int by_partitions(const or_state *st)
{
    return (uint64_t)st->env.idx->num_docs > ((uint64_t)1 << st->env.dc->prm.or_dense_log) || st->force_parts;
}

/* A query whose lists hold at most OR_HASH_RATIO postings a partition of the collection together
 * is hashed (the rule above), up to 2^28 */
static uint32_t hash_max(const or_state *st)
{
    uint32_t num_docs = st->env.idx->num_docs;
    uint64_t W = (uint64_t)1 << st->env.dc->prm.or_part_log, np = num_docs ? (num_docs + W - 1) / W : 1;
    uint64_t m = np * st->env.dc->prm.or_hash_ratio;
    return m > ((uint64_t)1 << 28) ? (uint32_t)1 << 28 : (uint32_t)m;
}

static void explain(const void *state, char *buf, size_t len)
{
    const or_state *st = state;
    int dense = !by_partitions(st);
    char hash[160] = "";
    if (!dense && st->env.dc->prm.or_hash_ratio)
        snprintf(hash, sizeof hash, ", a query of at most %llu postings by hashing (or_hash, OR_HASH_RATIO %u a partition)",
                 (unsigned long long)hash_max(st), st->env.dc->prm.or_hash_ratio);
    snprintf(buf, len, "or on this collection: %s (%u documents, OR_DENSE_LOG %u)%s",
             dense ? "one dense row a query (score_or) ranked by topk_rows or topk_select" : "partitions",
             st->env.idx->num_docs, st->env.dc->prm.or_dense_log, hash);
}

/* or_parts.cl's kernels, with the index's decoder: built when a search first needs them, since
 * on POCL they take tens of seconds to compile where the engine's programs take a few, and an
 * engine that never ranks OR by partitions need not wait for them. */
static cls_status build(or_state *st)
{
    static const char *const kernels[] = {"or_expand",     "or_decode", "or_bounds", "or_plan",   "or_hash_clear",
                                          "or_hash",       "or_hash_offer", "or_score", "or_pool_theta", "or_rest",
                                          "or_finish",     "block_maxima", NULL};
    if (st->prog) return CLS_OK;
    const char *files[] = {cdc_kernel_file(st->env.idx->codec), "decode.cl", "or_parts.cl", NULL};
    char note[4400];
    cls_status s = dev_build(st->env.dc, files, st->opts, &st->prog, note, sizeof note);
    for (const char *const *k = kernels; s == CLS_OK && *k; k++) s = dev_need_kernel(st->env.dc, st->prog, *k);
    return s;
}

/* Block maxima at weight 1 for the norms in force (ABI_BOUND_TABLE): block_maxima over every block
 * of the resident index. */
static cls_status block_maxima(or_state *st, float k1, float b)
{
    const cls_index *idx = st->env.idx;
    dev_ctx *dc = st->env.dc;
    cl_int err;
    if (!st->bmax) {
        size_t bytes = (size_t)idx->num_blocks * 4;
        st->bmax = dev_create_buffer(dc->ctx, CL_MEM_READ_WRITE, bytes > DEV_MIN_BUF ? bytes : DEV_MIN_BUF, NULL, &err);
        if (!st->bmax || err != CL_SUCCESS) {
            st->bmax = NULL;
            return err_wrap(clx_fail("clCreateBuffer", err), "block maxima (%zu bytes): ", bytes);
        }
    }
    cl_uint nwords;
    cls_status s0 = dev_words_count(st->env.words, &nwords);
    if (s0 != CLS_OK) return s0;
    for (uint64_t b0 = 0; b0 < idx->num_blocks; b0 += BMAX_GROUPS) {
        cl_uint first = (cl_uint)b0;
        size_t n = idx->num_blocks - b0 < BMAX_GROUPS ? (size_t)(idx->num_blocks - b0) : BMAX_GROUPS;
        dev_arg a[] = {DEV_MEM(st->env.words), DEV_U32(nwords), DEV_MEM(st->env.blocks), DEV_MEM(st->env.norms),
                       DEV_U32(first),     DEV_MEM(st->bmax)};
        cls_status s = dev_run(dc, "block_maxima", a, n, idx->block_size, "block maxima");
        if (s != CLS_OK) return s;
    }
    CLX_TRY(clFinish(dc->queue));
    dev_profile_collect(dc, 1);
    st->bmax_k1 = k1;
    st->bmax_b = b;
    return CLS_OK;
}

static cls_status prepare(void *state, const algo_search *sr)
{
    or_state *st = state;
    const cls_index *idx = st->env.idx;
    const uint32_t N = idx->num_docs, kk = sr->kk;
    const int parts = by_partitions(st);
    cls_status s;
    /* blocks are bounded by max_score where it holds, else by block maxima computed on the device
     * for these k1 and b (the whole index resident), else not at all (the list cache holds only
     * some lists: every block of every partition is decoded; -v says so) */
    st->bsrc = sr->prune ? ABI_BOUND_MAXSCORE : st->env.cached ? ABI_BOUND_NONE : ABI_BOUND_TABLE;
    if (parts && (s = build(st)) != CLS_OK) return s;
    if (parts && st->bsrc == ABI_BOUND_TABLE && (st->bmax_k1 != sr->k1 || st->bmax_b != sr->b) &&
        (s = block_maxima(st, sr->k1, sr->b)) != CLS_OK)
        return s;
    const uint32_t W = 1u << st->env.dc->prm.or_part_log, np = N ? (uint32_t)(((uint64_t)N + W - 1) / W) : 1;
    uint32_t seeds = 1 + kk / OR_SEED_HITS;
    if (seeds > OR_MAX_SEEDS) seeds = OR_MAX_SEEDS;
    if (seeds > np) seeds = np;
    /* a partition offers its top k and the ties of the k-th: at most its W documents */
    uint64_t pool_max = (uint64_t)np * W, pool = (uint64_t)kk * OR_POOL_PER_HIT;
    if (pool < OR_POOL_MIN) pool = OR_POOL_MIN;
    if (st->pool_hint) pool = st->pool_hint;
    if (pool > pool_max) pool = pool_max;
    st->parts = parts ? np : 0;
    st->seeds = seeds;
    st->pool = (uint32_t)pool;
    st->pool_max = (uint32_t)pool_max;
    st->hash_max = hash_max(st);
    st->nretry = 0;
    st->retry_pool = 0;
    if (parts) sr->counters[OR_C_BOUNDS_FROM].value = st->bsrc;
    return CLS_OK;
}

static void need(const void *state, const algo_query *aq, algo_need *n)
{
    const or_state *st = state;
    const batch_query *q = aq->q;
    const int empty = q->num_terms == 0;
    if (!st || !st->parts) { /* the dense row (or the reference's question) */
        *n = (algo_need){.flags = empty ? ABI_QF_EMPTY : 0u, .dense = 1};
        return;
    }
    const uint32_t B = st->env.idx->block_size, P = st->parts;
    /* a query of few postings meets about one partition a posting, a group's pass each: hashed
     * instead (the rule above), in a table of at least twice its postings, at least 256 entries of
     * a key and a sum, by one work-group (a unit) per OR_HASH_SHARE postings, each adding the
     * documents of a range of partitions */
    const uint64_t sum = aq->sum_df;
    int hash = !empty && st->hash_max && sum <= st->hash_max;
    uint32_t hlog = 8;
    while (hash && ((uint64_t)1 << hlog) < 2 * sum) hlog++;
    if (hash && ((uint64_t)8 << hlog) > aq->max_alloc) hash = 0; /* a table the device cannot hold */
    uint64_t g = (sum + OR_HASH_SHARE - 1) / OR_HASH_SHARE;
    *n = (algo_need){
        .flags = (empty ? ABI_QF_EMPTY : 0u) | (hash ? ABI_QF_HASH | hlog << 8 : 0u),
        .ahead = 1,
        .units = hash ? (uint32_t)(g < 1 ? 1 : g > P ? P : g) : 0,
        .unit_span = hash ? P : 0,
        .table_words = hash ? (uint64_t)2 << hlog : 0,
        /* per query: its terms' partition bounds and its own, its seeds, its pool, its control
         * words and its rounds' entries; per block decoded ahead: contributions, offsets and its
         * task; per list decoded ahead: its partitions' first slots */
        .bytes = ((uint64_t)q->num_terms + 2) * P * 4 + (uint64_t)st->seeds * 4 + (uint64_t)st->pool * 8 + 16 +
                 ABI_OR_ROUNDS * 4,
        .block_bytes = (uint64_t)B * 6 + 8,
        .list_bytes = ((uint64_t)P + 1) * 4,
        /* the block heads of its lists and the blocks pruning leaves, which the engine's measured
         * rate prices (a fraction of the postings, the more so the longer the lists) */
        .priced = 1,
        .cost = empty ? 0 : sum / 8 + (sum + B - 1) / B,
    };
}

static int fits(const void *state, const algo_totals *t)
{
    const or_state *st = state;
    if (!st || !st->parts) return 1;
    const uint64_t P = st->parts, pool = st->pool, M = t->max_alloc;
    return t->nterms * P * 4 <= M && t->ahead_blocks * st->env.idx->block_size * 4 <= M &&
           t->ahead_lists * (P + 1) * 4 <= M && t->nq * P < UINT32_MAX && t->nq * pool < UINT32_MAX &&
           t->nq * P * 4 <= M && t->nq * pool * 4 <= M;
}

/* score_or, the dense accumulation (cl/or.cl). */
cls_status or_accumulate(algo_batch *b, cl_mem acc)
{
    dev_arg a[] = {DEV_MEM(b->in),    DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_MEM(b->docs),
                   DEV_MEM(b->freqs), DEV_MEM(b->norms),        DEV_U32(b->num_docs),   DEV_MEM(acc)};
    return dev_run(b->dc, "score_or", a, b->nq, b->dc->prm.wg_score, "score");
}

/* The queue pass's rounds (cl/abi.h: ABI_OR_ROUND_FROM, 64, 512, 4096): where each launch of
 * or_score ends in every query's queue (the last takes the rest), or_pool_theta raising each
 * query's theta to the k-th best of its pool in between. Each round's bound is eight times the
 * last's, so a query whose histogram cannot raise theta (or_parts.cl: or_pool_theta) offers a few
 * thousand candidates a round instead of nearly every document it matches (docs/PERFORMANCE.md,
 * "Ranked OR by docID-range partitions"). */

/* or_score's arguments, in the order of the kernel's parameters (cl/or_parts.cl: or_score): the
 * seeds' launch sets them all, the queue pass's rounds patch some by name. */
enum {
    ORS_IN, ORS_QINFO_BASE, ORS_QTERM_BASE, ORS_BOUNDS_BASE, ORS_BLOCKS, ORS_BMAX, ORS_BSRC, ORS_NP, ORS_K, ORS_POOL,
    ORS_M, ORS_UB, ORS_ITEMS, ORS_SEEDS, ORS_PERSISTENT, ORS_NQ, ORS_CTL, ORS_GBASE, ORS_PDOC, ORS_PKEY, ORS_HIST,
    ORS_C, ORS_O, ORS_S, ORS_FROM, ORS_TO, ORS_ACT, ORS_ROUND,
    ORS_NARGS
};

static cls_status launch(void *state, algo_batch *b)
{
    or_state *st = state;
    dev_ctx *dc = b->dc;
    cls_status s;
    if (!st->parts) { /* a small collection: the dense row (prepare's rule) */
        if ((s = dev_buf_need(dc, &st->acc, (size_t)b->nq * b->num_docs * 4, "accumulator rows")) != CLS_OK) return s;
        topk_rows_of(&b->rank, st->acc.mem, st->acc.mem);
        return or_accumulate(b, st->acc.mem);
    }
    cl_uint nq = b->nq, np = st->parts, seeds = st->seeds, pool = st->pool, kk = b->kk;
    /* or_score reads term i's abi_bound at index i: every term of a parts batch has one, in order */
    assert(b->nbounds == b->nterms);
    cl_uint gbase = ABI_OR_CTL_BATCH(nq), bsrc = st->bsrc, bs = b->idx->block_size, zero = 0, one = 1;
    if ((s = dev_buf_need(dc, &st->m, (size_t)b->nterms * np * 4, "partition bounds")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->tasks, (size_t)b->otasks * sizeof(abi_task), "decode tasks")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->c, (size_t)b->otasks * bs * 4, "decoded contributions")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->o, (size_t)b->otasks * bs * 2, "decoded offsets")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->s, (size_t)b->nolists * (np + 1) * 4, "partitions' first slots")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->ub, (size_t)nq * np * 4, "partition bounds")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->items, (size_t)nq * np * 4, "partition queue")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->seed, (size_t)nq * seeds * 4, "seed partitions")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->ctl, ((size_t)gbase + ABI_OR_CTL_BATCH_WORDS) * 4, "partition counters")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->act, (size_t)nq * ABI_OR_ROUNDS * 4, "queries of each round")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->hist, (size_t)nq * ABI_OR_HIST * 4, "candidate histograms")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->cand, (size_t)nq * pool * 4, "candidates")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->cscore, (size_t)nq * pool * 4, "candidate scores")) != CLS_OK ||
        (s = dev_buf_need(dc, &st->qseg, (size_t)nq * 8, "top-k segments")) != CLS_OK)
        return s;
    cl_event ev;
    CLX_TRY(clEnqueueFillBuffer(dc->queue, st->m.mem, &zero, 4, 0, (size_t)b->nterms * np * 4, 0, NULL, &ev));
    if ((s = dev_record_fill(dc, ev, "bounds")) != CLS_OK) return s;
    CLX_TRY(clEnqueueFillBuffer(dc->queue, st->ctl.mem, &zero, 4, (size_t)gbase * 4, ABI_OR_CTL_BATCH_WORDS * 4, 0, NULL,
                                &ev));
    if ((s = dev_record_fill(dc, ev, "bounds")) != CLS_OK) return s;
    CLX_TRY(clEnqueueFillBuffer(dc->queue, st->hist.mem, &zero, 4, 0, (size_t)nq * ABI_OR_HIST * 4, 0, NULL, &ev));
    if ((s = dev_record_fill(dc, ev, "bounds")) != CLS_OK) return s;
    cl_uint nwords;
    if ((s = dev_words_count(b->words, &nwords)) != CLS_OK) return s;
    /* the batch's lists, each decoded once into contributions at its weight (or_decode) */
    dev_arg ax[] = {DEV_MEM(b->in), DEV_U32(b->olists_base), DEV_MEM(st->tasks.mem)};
    if ((s = dev_run(dc, "or_expand", ax, b->nolists, bs, "decode")) != CLS_OK) return s;
    dev_arg ad[] = {DEV_MEM(b->words), DEV_U32(nwords),          DEV_MEM(b->blocks),   DEV_MEM(b->norms),
                    DEV_MEM(b->in),      DEV_U32(b->olists_base),  DEV_MEM(st->tasks.mem), DEV_U32(np),
                    DEV_MEM(st->c.mem), DEV_MEM(st->o.mem),    DEV_MEM(st->s.mem)};
    if ((s = dev_run(dc, "or_decode", ad, b->otasks, bs, "decode")) != CLS_OK) return s;
    /* or_bounds' groups per term: a batch of few terms still gives the device OR_BOUND_GROUPS_PER_CU
     * groups a compute unit (a query alone on gov2 has a few lists of up to 195,000 blocks), none
     * with fewer than a group's width of blocks to take */
    uint32_t most = 0;
    for (uint32_t i = 0; i < b->nbounds; i++)
        if (b->bounds[i].num_blocks > most) most = b->bounds[i].num_blocks;
    size_t want = (size_t)dc->dev.info.compute_units * OR_BOUND_GROUPS_PER_CU;
    cl_uint ways = b->nbounds && b->nbounds < want ? (cl_uint)((want + b->nbounds - 1) / b->nbounds) : 1;
    if (ways > (most + bs - 1) / bs) ways = (most + bs - 1) / bs;
    if (st->bound_ways) ways = st->bound_ways;
    if (ways < 1) ways = 1;
    dev_arg ab[] = {DEV_MEM(b->in),       DEV_U32(b->queries_base), DEV_U32(b->terms_base), DEV_U32(b->bounds_base),
                    DEV_MEM(b->blocks), DEV_MEM(st->bmax),       DEV_U32(bsrc),          DEV_U32(np),
                    DEV_U32(ways),        DEV_MEM(st->m.mem)};
    if ((s = dev_run(dc, "or_bounds", ab, (size_t)b->nbounds * ways, bs, "bounds")) != CLS_OK) return s;
    dev_arg ap[] = {DEV_MEM(b->in),      DEV_U32(b->queries_base), DEV_U32(np),           DEV_U32(seeds),
                    DEV_MEM(st->m.mem), DEV_MEM(st->ub.mem),   DEV_MEM(st->seed.mem), DEV_MEM(st->ctl.mem)};
    if ((s = dev_run(dc, "or_plan", ap, nq, bs, "bounds")) != CLS_OK) return s;
    if (b->ntables) { /* the queries of few postings: each in a hash table of its own (the rule above),
                      * a group a unit (a share of its partitions), then their k best to the pool */
        if ((s = dev_buf_need(dc, &st->htab, (size_t)b->table_words * 4, "hash tables")) != CLS_OK) return s;
        cl_uint hw = (cl_uint)b->table_words; /* a multiple of 512: tables of 2^8 entries and more */
        dev_arg ac[] = {DEV_U32(hw), DEV_MEM(st->htab.mem)};
        if ((s = dev_run(dc, "or_hash_clear", ac, (hw / 4 + 255) / 256, 256, "hash")) != CLS_OK) return s;
        dev_arg ah[] = {DEV_MEM(b->in),         DEV_U32(b->queries_base), DEV_U32(b->bounds_base), DEV_U32(b->units_base),
                        DEV_MEM(b->blocks),   DEV_U32(np),              DEV_MEM(st->c.mem),   DEV_MEM(st->o.mem),
                        DEV_MEM(st->s.mem),   DEV_MEM(st->htab.mem)};
        if ((s = dev_run(dc, "or_hash", ah, b->nunits, st->hash_wg, "hash")) != CLS_OK) return s;
        dev_arg ao[] = {DEV_MEM(b->in),        DEV_U32(b->queries_base), DEV_U32(kk),          DEV_U32(pool),
                        DEV_MEM(st->ctl.mem), DEV_MEM(st->cand.mem),    DEV_MEM(st->cscore.mem), DEV_MEM(st->htab.mem)};
        if ((s = dev_run(dc, "or_hash_offer", ao, nq, st->hash_wg, "hash")) != CLS_OK) return s;
    }
    dev_arg as[ORS_NARGS] = {
        [ORS_IN] = DEV_MEM(b->in),
        [ORS_QINFO_BASE] = DEV_U32(b->queries_base),
        [ORS_QTERM_BASE] = DEV_U32(b->terms_base),
        [ORS_BOUNDS_BASE] = DEV_U32(b->bounds_base),
        [ORS_BLOCKS] = DEV_MEM(b->blocks),
        [ORS_BMAX] = DEV_MEM(st->bmax),
        [ORS_BSRC] = DEV_U32(bsrc),
        [ORS_NP] = DEV_U32(np),
        [ORS_K] = DEV_U32(kk),
        [ORS_POOL] = DEV_U32(pool),
        [ORS_M] = DEV_MEM(st->m.mem),
        [ORS_UB] = DEV_MEM(st->ub.mem),
        [ORS_ITEMS] = DEV_MEM(st->seed.mem), /* the seed table first, then the queues */
        [ORS_SEEDS] = DEV_U32(seeds),
        [ORS_PERSISTENT] = DEV_U32(zero),
        [ORS_NQ] = DEV_U32(nq),
        [ORS_CTL] = DEV_MEM(st->ctl.mem),
        [ORS_GBASE] = DEV_U32(gbase),
        [ORS_PDOC] = DEV_MEM(st->cand.mem),
        [ORS_PKEY] = DEV_MEM(st->cscore.mem),
        [ORS_HIST] = DEV_MEM(st->hist.mem),
        [ORS_C] = DEV_MEM(st->c.mem),
        [ORS_O] = DEV_MEM(st->o.mem),
        [ORS_S] = DEV_MEM(st->s.mem),
        [ORS_FROM] = DEV_U32(zero),
        [ORS_TO] = DEV_U32(zero),
        [ORS_ACT] = DEV_MEM(st->act.mem),
        [ORS_ROUND] = DEV_U32(zero),
    };
    if ((s = dev_run(dc, "or_score", as, (size_t)nq * seeds, bs, "seeds")) != CLS_OK) return s;
    dev_arg at[] = {DEV_U32(kk), DEV_U32(pool), DEV_MEM(st->ctl.mem), DEV_MEM(st->cscore.mem)};
    if ((s = dev_run(dc, "or_pool_theta", at, nq, bs, "seeds")) != CLS_OK) return s;
    dev_arg ar[] = {DEV_U32(np),    DEV_MEM(st->ub.mem),    DEV_MEM(st->ctl.mem),
                    DEV_U32(gbase), DEV_MEM(st->items.mem), DEV_MEM(st->act.mem)};
    if ((s = dev_run(dc, "or_rest", ar, nq, bs, "bounds")) != CLS_OK) return s;
    as[ORS_ITEMS] = DEV_MEM(st->items.mem);
    as[ORS_PERSISTENT] = DEV_U32(one);
    size_t groups = (size_t)dc->dev.info.compute_units * OR_GROUPS_PER_CU;
    cl_uint from = 0;
    for (cl_uint r = 0; r < ABI_OR_ROUNDS && from < np; r++) {
        cl_uint to = ABI_OR_ROUND_FROM(r + 1);
        if (r) { /* the ticket counter, for this round */
            CLX_TRY(clEnqueueFillBuffer(dc->queue, st->ctl.mem, &zero, 4, ((size_t)gbase + ABI_OR_CTL_TICKET) * 4, 4, 0,
                                    NULL, &ev));
            if ((s = dev_record_fill(dc, ev, "score")) != CLS_OK) return s;
        }
        as[ORS_FROM] = DEV_U32(from);
        as[ORS_TO] = DEV_U32(to);
        as[ORS_ROUND] = DEV_U32(r);
        if ((s = dev_run(dc, "or_score", as, groups, bs, "score")) != CLS_OK) return s;
        if (to < np && (s = dev_run(dc, "or_pool_theta", at, nq, bs, "score")) != CLS_OK) return s;
        from = to;
    }
    cl_uint or_at = (cl_uint)ABI_OUT_OR((size_t)nq, kk);
    dev_arg af[] = {DEV_U32(nq),        DEV_U32(pool),       DEV_MEM(st->ctl.mem), DEV_U32(gbase),
                    DEV_MEM(st->qseg.mem), DEV_MEM(b->out), DEV_U32(or_at)};
    if ((s = dev_run(dc, "or_finish", af, (nq + 63) / 64, 64, "score")) != CLS_OK) return s;
    topk_segments(&b->rank, st->cscore.mem, st->cand.mem, st->qseg.mem, 0);
    return CLS_OK;
}

/* or_finish's words after the results: overflowed pools, then partitions scored, then (partition,
 * term) pairs left unread (ABI_OUT_OR, one word after the results) */
static uint32_t extra_words(const void *state, const algo_batch *b)
{
    const or_state *st = state;
    if (!st->parts) return 0;
    return (uint32_t)(ABI_OUT_OR((size_t)b->nq, b->kk) - ABI_OUT_WORDS((size_t)b->nq, b->kk) + ABI_OUT_OR_WORDS((size_t)b->nq));
}

static cls_status collect(void *state, const algo_batch *b, const uint32_t *extra, uint64_t *blocks_decoded,
                          cls_counter *counters)
{
    or_state *st = state;
    (void)blocks_decoded;
    if (!st->parts) return CLS_OK;
    const uint32_t nq = b->nq, *w = extra + (ABI_OUT_OR((size_t)nq, b->kk) - ABI_OUT_WORDS((size_t)nq, b->kk));
    counters[OR_C_PARTITIONS_SCORED].value += w[nq];
    counters[OR_C_TERMS_SKIPPED].value += w[nq + 1];
    counters[OR_C_QUERIES_HASHED].value += b->ntables;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t offered = w[i];
        if (!offered) continue;
        if (!vec_reserve(&st->retry, &st->retry_cap, st->nretry + 1, sizeof *st->retry))
            return err_set(CLS_E_NOMEM, "out of memory for the queries to run again");
        st->retry[st->nretry++] = (uint32_t)algo_batch_query(b, i);
        if (offered > st->retry_pool) st->retry_pool = offered;
    }
    return CLS_OK;
}

/* Queries whose partitions offered more candidates than their pool held run again, with a pool of
 * what they offered (twice, as the threshold's timing varies), until none overflow; at pool_max
 * (every document of every partition) none can. */
static cls_status rerun(void *state, const uint32_t **queries, uint64_t *n)
{
    or_state *st = state;
    *n = 0;
    if (!st->nretry) return CLS_OK;
    uint64_t want = 2 * (uint64_t)st->retry_pool;
    if (st->pool >= st->pool_max) return err_set(CLS_E_OPENCL, "or_score offered more candidates than partitions hold");
    st->pool = (uint32_t)(want > st->pool_max ? st->pool_max : want < 2 * (uint64_t)st->pool ? 2 * (uint64_t)st->pool : want);
    *queries = st->retry;
    *n = st->nretry;
    st->nretry = 0;
    st->retry_pool = 0;
    return CLS_OK;
}

static uint32_t ref(const ref_query *rq, ref_hit *out)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < rq->num_docs; d++)
        if (rq->count[d] > 0) out[n++] = (ref_hit){.s = rq->acc[d], .d = d};
    return n;
}

void or_set_pool(or_state *s, uint32_t slots) { s->pool_hint = slots; }
void or_set_bound_ways(or_state *s, uint32_t ways) { s->bound_ways = ways; }
void or_force_partitions(or_state *s, int force) { s->force_parts = force != 0; }

static const char *const kernels[] = {"score_or", NULL};

const query_algo algo_or = {
    .name = "or",
    .help = "documents holding any query term, ranked by BM25",
    .kernel_file = "or.cl",
    .kernels = kernels,
    .decode_file = "or_parts.cl",
    .describe = "docID-range partitions with block-max pruning (or_expand + or_decode: each list decoded once, "
                "or_bounds + or_plan + or_score seeds + or_pool_theta, or_rest, or_score queue in rounds (essential "
                "terms first: MaxScore within a partition) + "
                "or_pool_theta + or_finish) + top-k over the candidate pool",
    .counters = counter_names,
    .create = create,
    .free = destroy,
    .decode_options = decode_options,
    .explain = explain,
    .prepare = prepare,
    .need = need,
    .fits = fits,
    .launch = launch,
    .extra_words = extra_words,
    .collect = collect,
    .rerun = rerun,
    .ref = ref,
};
