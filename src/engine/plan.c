/* The batch planner (plan.h). */
#include "engine/plan.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "index/bm25.h"
#include "index/index.h"
#include "util/err.h"
#include "util/vec.h"

cls_status plan_init(batch_plan *pl, const cls_index *idx)
{
    memset(pl, 0, sizeof *pl);
    pl->idx = idx;
    pl->bound_idf = cls_index_scoring(idx) == CLS_SCORING_BM25;
    pl->slot = calloc((size_t)idx->num_terms + 1, sizeof *pl->slot);
    pl->touched = malloc(((size_t)idx->num_terms + 1) * sizeof *pl->touched);
    if (!pl->slot || !pl->touched) {
        plan_free(pl);
        return err_set(CLS_E_NOMEM, "out of memory for the batch planner (%u terms)", idx->num_terms);
    }
    return CLS_OK;
}

void plan_free(batch_plan *pl)
{
    free(pl->slot);
    free(pl->touched);
    free(pl->lists);
    free(pl->queries);
    free(pl->terms);
    free(pl->skips);
    free(pl->bounds);
    free(pl->units);
    free(pl->olists);
    free(pl->olist_next);
    free(pl->term_skip);
    memset(pl, 0, sizeof *pl);
}

/* plan_cost from what the planner knows of a query: its needs, its shortest list (its postings,
 * its blocks), the postings of all its lists; prune_k: the hits a pruned one-term query keeps
 * (0: no pruning). A pruned query reads its blocks' heads and decodes, scores and ranks about
 * two blocks a hit (ties and the margin take a few more than k blocks). */
static uint64_t need_cost(const cls_index *idx, const algo_need *need, uint64_t shortest, uint64_t shortest_blocks,
                          uint64_t sum, uint32_t num_terms, uint32_t prune_k)
{
    if (need->priced) return need->cost;
    uint64_t rows = need->dense ? idx->num_docs : 0;
    if (need->flags & ABI_QF_EMPTY) return rows;
    if (need->skip && prune_k && num_terms == 1 && shortest_blocks > prune_k) {
        uint64_t top = 2 * (uint64_t)prune_k * idx->block_size;
        return shortest_blocks + (top < shortest ? top : shortest) + rows;
    }
    return (need->skip ? shortest * num_terms : sum) + rows;
}

uint64_t plan_cost(const cls_index *idx, const query_algo *algo, const void *state, const batch_query *q,
                   const batch_term *t, uint32_t prune_k, uint64_t max_alloc)
{
    uint64_t sum = 0, shortest = UINT64_MAX, blocks = 0;
    for (uint32_t j = 0; j < q->num_terms; j++) {
        uint64_t df = idx->terms[t[j].term].df;
        sum += df;
        if (df < shortest) {
            shortest = df;
            blocks = idx->terms[t[j].term].num_blocks;
        }
    }
    algo_need need = {0};
    algo_query aq = {.q = q, .shortest_df = (uint32_t)(q->num_terms ? shortest : 0), .shortest_blocks = (uint32_t)blocks,
                     .sum_df = sum, .max_alloc = max_alloc};
    algo->need(state, &aq, &need);
    return need_cost(idx, &need, q->num_terms ? shortest : 0, blocks, sum, q->num_terms, prune_k);
}

uint32_t plan_scratch(uint32_t k)
{
    uint32_t p = 1;
    while (p < k) p <<= 1;
    return p;
}

void plan_begin(batch_plan *pl, const query_algo *algo, const void *state, uint32_t kk, const plan_limits *lim,
                const uint32_t *order, uint64_t q0)
{
    pl->algo = algo;
    pl->state = state;
    pl->kk = kk;
    pl->P = plan_scratch(kk);
    pl->lim = *lim;
    pl->order = order;
    pl->q0 = q0;
    pl->nq = pl->ntasks = pl->nlists = pl->nterms = pl->nskips = pl->nunits = pl->dense = pl->ntouched = pl->two_level = 0;
    pl->npruned = pl->ahead = pl->nolists = pl->ntables = pl->nbounds = 0;
    pl->table_words = 0;
    pl->postings_in_lists = pl->otasks = pl->opostings = 0;
    pl->dec = pl->cand = pl->stasks = pl->bytes = pl->blocks_in_lists = pl->cost = 0;
    if (lim->cache) lc_begin(lim->cache);
}

/* Takes back the terms slotted since ntouched0 (a query that did not fit). */
static void unslot(batch_plan *pl, uint32_t ntouched0)
{
    for (uint32_t i = ntouched0; i < pl->ntouched; i++) pl->slot[pl->touched[i]] = 0;
    pl->ntouched = ntouched0;
}

/* A query that is not added: its terms' slots, its lists' loads and the links to its abi_olists
 * (from the kept lists of the same term: a chain grows at its end only) are taken back. */
static cls_status not_added(batch_plan *pl, uint32_t ntouched0, size_t nloads0, cls_status s)
{
    unslot(pl, ntouched0);
    for (uint32_t l = 0; l < pl->nolists; l++)
        if (pl->olist_next[l] > pl->nolists) pl->olist_next[l] = 0;
    cls_status r = pl->lim.cache ? lc_rollback(pl->lim.cache, nloads0) : CLS_OK;
    return s != CLS_OK ? s : r;
}

uint64_t plan_query(const batch_plan *pl, uint32_t i) { return pl->order ? pl->order[pl->q0 + i] : pl->q0 + i; }

cls_status plan_add(batch_plan *pl, const cls_batch *bt, int *added)
{
    pl->cut = PLAN_CUT_ALLOC; /* until the limits below are weighed */
    *added = 0;
    const cls_index *idx = pl->idx;
    const uint64_t qi = plan_query(pl, pl->nq);
    assert(qi < bt->nq);
    const batch_query *q = &bt->q[qi];
    const batch_term *t = bt->terms + q->term_start;
    /* the driving term: the shortest list, the first of them on a tie (block skipping's rule) */
    uint32_t drive = 0;
    uint64_t sum = 0; /* postings of all its lists, for its cost */
    for (uint32_t j = 0; j < q->num_terms; j++) {
        sum += idx->terms[t[j].term].df;
        if (idx->terms[t[j].term].df < idx->terms[t[drive].term].df) drive = j;
    }
    uint32_t shortest = q->num_terms ? idx->terms[t[drive].term].df : 0;
    uint32_t shortest_blocks = q->num_terms ? idx->terms[t[drive].term].num_blocks : 0;
    algo_need need = {0};
    algo_query question = {.q = q, .shortest_df = shortest, .shortest_blocks = shortest_blocks, .sum_df = sum,
                     .max_alloc = pl->lim.max_alloc};
    pl->algo->need(pl->state, &question, &need);
    int empty = (need.flags & ABI_QF_EMPTY) != 0;
    if (empty) need.cand = 0; /* a dense row is still zeroed and ranked (empty) by the kernels */
    const int table = need.table_words > 0;
    const uint32_t nunits = need.units ? need.units : 1;

    if (!vec_reserve(&pl->queries, &pl->queries_cap, (size_t)pl->nq + 1, sizeof *pl->queries) ||
        !vec_reserve(&pl->terms, &pl->terms_cap, (size_t)pl->nterms + q->num_terms, sizeof *pl->terms) ||
        !vec_reserve(&pl->skips, &pl->skips_cap, (size_t)pl->nskips + q->num_terms, sizeof *pl->skips) ||
        !vec_reserve(&pl->bounds, &pl->bounds_cap, (size_t)pl->nbounds + q->num_terms, sizeof *pl->bounds) ||
        !vec_reserve(&pl->term_skip, &pl->term_skip_cap, (size_t)q->num_terms + 1, sizeof *pl->term_skip) ||
        !vec_reserve(&pl->units, &pl->units_cap, (size_t)pl->nunits + nunits, sizeof *pl->units) ||
        !vec_reserve(&pl->olists, &pl->olists_cap, (size_t)pl->nolists + q->num_terms, sizeof *pl->olists) ||
        !vec_reserve(&pl->olist_next, &pl->olist_next_cap, (size_t)pl->nolists + q->num_terms, sizeof *pl->olist_next))
        return err_set(CLS_E_NOMEM, "out of memory for the batch plan");
    /* Slot the query's new whole lists and its skipped lists' regions, costing what they add;
     * undone if the query does not fit. */
    const uint32_t B = idx->block_size, ntouched0 = pl->ntouched;
    list_cache *cache = pl->lim.cache;
    const size_t nloads0 = cache ? cache->nloads : 0;
    uint64_t dec = pl->dec, stasks = pl->stasks, in_lists = 0, otasks = pl->otasks, opostings = pl->opostings;
    uint32_t ntasks = pl->ntasks, nskips = pl->nskips, nolists = pl->nolists, nbounds = pl->nbounds;
    cls_status s = CLS_OK;
    /* block-max pruning (cl/abi.h: ABI_SKIP_TOP): the list of a one-term query, where the search
     * ranks at the blocks' max_score parameters and the list has more blocks than hits kept */
    const int top = need.skip && pl->lim.prune && q->num_terms == 1 && !empty &&
                    idx->terms[t[0].term].num_blocks > pl->kk;
    for (uint32_t j = 0; j < q->num_terms && !empty; j++) {
        const idx_term *te = &idx->terms[t[j].term];
        pl->term_skip[j] = 0;
        uint64_t room;
        uint32_t first_block = te->first_block;
        int skip = !need.ahead && (top || (need.skip && j != drive && te->num_blocks > 1));
        if (cache && (need.ahead || skip || !pl->slot[t[j].term])) { /* its list must be on the device for the batch */
            int fits;
            if ((s = lc_pin(cache, t[j].term, &first_block, &fits)) != CLS_OK || !fits) {
                if (s == CLS_OK && pl->nq == 0)
                    s = err_input(CLS_E_DEVMEM, "query %s needs more room for its posting lists than the device's list "
                                "cache has (%llu words, %llu block records; give the engine more device memory)",
                                cls_batch_qid(bt, (size_t)qi), (unsigned long long)cache->words.size,
                                (unsigned long long)cache->blocks.size);
                return not_added(pl, ntouched0, nloads0, s);
            }
        }
        if (need.ahead) { /* decoded ahead into contributions, once for every query of the batch
                           * that gives the term this weight; its slot: 1 + that abi_olist */
            float w = bm25_weight(idx, t[j].term, t[j].weight);
            /* max_score holds the idf where BM25 scores, so the bound's scale is weight / idf */
            float scale = pl->bound_idf ? (float)((double)w / (double)bm25_idf(idx->coll_docs, idx_coll_df(idx, t[j].term))) : w;
            uint32_t ol = pl->slot[t[j].term], last = 0;
            while (ol && pl->olists[ol - 1].weight != w) { /* the term's lists at other weights */
                last = ol;
                ol = pl->olist_next[ol - 1];
            }
            if (!ol) {
                if ((otasks + te->num_blocks) * B >= UINT32_MAX) { /* slots are 32-bit on the device */
                    if (pl->nq == 0)
                        s = err_input(CLS_E_DEVMEM, "query %s decodes more than 2^32 postings", cls_batch_qid(bt, (size_t)qi));
                    return not_added(pl, ntouched0, nloads0, s);
                }
                pl->olists[nolists] = (abi_olist){.first_block = first_block, .num_blocks = te->num_blocks,
                                                  .task_base = (uint32_t)otasks, .weight = w};
                pl->olist_next[nolists] = 0;
                if (last) { /* chained after the term's others */
                    pl->olist_next[last - 1] = nolists + 1;
                } else {
                    pl->slot[t[j].term] = nolists + 1;
                    pl->touched[pl->ntouched++] = t[j].term;
                }
                ol = ++nolists;
                otasks += te->num_blocks;
                opostings += te->df;
            }
            pl->bounds[nbounds++] = (abi_bound){.query = pl->nq, .first_block = first_block, .num_blocks = te->num_blocks,
                                                .olist = ol - 1, .olist_task = pl->olists[ol - 1].task_base,
                                                .term = pl->nterms + j, .scale = scale};
            pl->term_skip[j] = 0;
            in_lists += te->num_blocks;
            continue;
        }
        if (skip) { /* a region of its own, blocks chosen on the device */
            uint32_t max = top || te->num_blocks < shortest ? te->num_blocks : shortest;
            room = (uint64_t)max * B;
            if (dec + room < UINT32_MAX) {
                pl->skips[nskips] = (abi_skip){.query = pl->nq, .first_block = first_block,
                                               .num_blocks = te->num_blocks, .task_base = (uint32_t)stasks,
                                               .max_tasks = max, .dst_base = (uint32_t)dec,
                                               .kind = top ? ABI_SKIP_TOP : ABI_SKIP_DRIVEN, .k = top ? pl->kk : 0};
                pl->term_skip[j] = ++nskips;
                in_lists += te->num_blocks;
                stasks += max;
                dec += room;
                continue;
            }
        } else if (pl->slot[t[j].term]) {
            continue;
        } else {
            room = (uint64_t)te->num_blocks * B;
            if (dec + room < UINT32_MAX) { /* slot + 1 must fit 32 bits */
                pl->slot[t[j].term] = (uint32_t)dec + 1;
                pl->touched[pl->ntouched++] = t[j].term;
                dec += room;
                ntasks += te->num_blocks;
                in_lists += te->num_blocks;
                continue;
            }
        }
        if (pl->nq == 0) s = err_input(CLS_E_DEVMEM, "query %s decodes more than 2^32 postings", cls_batch_qid(bt, (size_t)qi));
        return not_added(pl, ntouched0, nloads0, s);
    }
    const uint64_t twords = pl->table_words + need.table_words;
    uint64_t bytes = pl->bytes + need.table_words * 4 + (uint64_t)pl->kk * 8 + (uint64_t)pl->P * 8 + sizeof(abi_query) + 16 +
                     (uint64_t)q->num_terms * sizeof(abi_term) + (uint64_t)(ntasks - pl->ntasks) * sizeof(abi_task) +
                     (uint64_t)(pl->ntouched - ntouched0) * sizeof(abi_list) +
                     (uint64_t)(nskips - pl->nskips) * (sizeof(abi_skip) + 4) +
                     (uint64_t)(nbounds - pl->nbounds) * (sizeof(abi_bound) + 4) +
                     (uint64_t)nunits * (sizeof(abi_unit) + 12 + (need.skip ? (uint64_t)pl->kk * 8 + (uint64_t)pl->P * 8 : 0)) +
                     (stasks - pl->stasks) * sizeof(abi_task) + (dec - pl->dec) * 8 + (uint64_t)need.cand * 8 +
                     (uint64_t)need.dense * idx->num_docs * 4 + need.bytes + (otasks - pl->otasks) * need.block_bytes +
                     (uint64_t)(nolists - pl->nolists) * (need.list_bytes + sizeof(abi_olist));
    uint64_t rows = pl->dense + need.dense, nq = (uint64_t)pl->nq + 1;
    uint64_t cost = pl->cost + need_cost(idx, &need, shortest, q->num_terms ? idx->terms[t[drive].term].num_blocks : 0, sum,
                                         q->num_terms, pl->lim.prune ? pl->kk : 0);
    const plan_limits *L = &pl->lim;
    const algo_totals tot = {.nq = nq, .nterms = (uint64_t)pl->nterms + q->num_terms, .ahead_blocks = otasks,
                             .ahead_lists = nolists, .max_alloc = L->max_alloc};
    pl->cut = nq > L->max_queries                                                 ? PLAN_CUT_QUERIES
              : bytes > L->budget                                                 ? PLAN_CUT_BYTES
              : L->max_cost && pl->nq >= L->cost_floor && cost > L->max_cost ? PLAN_CUT_COST
                                                                                  : PLAN_CUT_ALLOC;
    if (pl->nq > 0 && (pl->cut != PLAN_CUT_ALLOC || dec * 4 > L->max_alloc ||
                       stasks * sizeof(abi_task) > L->max_alloc || (pl->cand + need.cand) * 4 > L->max_alloc ||
                       rows * idx->num_docs * 4 > L->max_alloc || nq * pl->P * 4 > L->max_alloc ||
                       twords >= UINT32_MAX || twords * 4 > L->max_alloc ||
                       (pl->algo->fits && !pl->algo->fits(pl->state, &tot))))
        return not_added(pl, ntouched0, nloads0, CLS_OK);
    pl->cut = PLAN_CUT_NONE;
    /* It fits: write its lists and descriptors. */
    if (!vec_reserve(&pl->lists, &pl->lists_cap, (size_t)pl->nlists + (pl->ntouched - ntouched0) + 1, sizeof *pl->lists))
        return not_added(pl, ntouched0, nloads0, err_set(CLS_E_NOMEM, "out of memory for the batch plan"));
    for (uint32_t i = ntouched0; i < pl->ntouched && !need.ahead; i++) { /* ahead: slots are abi_olists */
        const idx_term *te = &idx->terms[pl->touched[i]];
        uint32_t at = pl->slot[pl->touched[i]] - 1;
        pl->lists[pl->nlists++] =
            (abi_list){.first_block = cache ? cache->e[pl->touched[i]].block_pos : te->first_block, .num_blocks = te->num_blocks, .dst = at, .task_base = pl->ntasks};
        pl->ntasks += te->num_blocks;
    }
    assert(pl->ntasks == ntasks);
    abi_query *aq = &pl->queries[pl->nq];
    *aq = (abi_query){.term_start = pl->nterms, .num_terms = empty ? 0 : q->num_terms,
                      .cand_offset = table ? (uint32_t)pl->table_words : (uint32_t)pl->cand, .flags = need.flags};
    pl->table_words = twords;
    pl->ntables += (uint32_t)table;
    for (uint32_t j = 0; j < aq->num_terms; j++) {
        const idx_term *te = &idx->terms[t[j].term];
        uint32_t sk = pl->term_skip[j];
        pl->terms[pl->nterms++] = (abi_term){
            .list_offset = sk ? pl->skips[sk - 1].dst_base : pl->slot[t[j].term] - 1,
            .df = te->df,
            .weight = bm25_weight(idx, t[j].term, t[j].weight),
            .skip = sk};
    }
    /* as many units as the algorithm asks for, splitting its span into ranges of one size, in
     * order; a span of 0 leaves their shares to the device (where a driving list's length is
     * known once its blocks are chosen), and their ranges at 0 without two 64-bit divisions a
     * unit: AND's units, tens a query on a large collection, are most of a batch's */
    const uint64_t span = need.unit_span;
    const uint32_t first = pl->nunits;
    abi_unit *un = pl->units + first;
    if (span == 0)
        for (uint32_t u = 0; u < nunits; u++) un[u] = (abi_unit){.query = pl->nq, .first_unit = first};
    else
        for (uint32_t u = 0; u < nunits; u++)
            un[u] = (abi_unit){.query = pl->nq, .first_unit = first, .begin = (uint32_t)((uint64_t)u * span / nunits),
                               .end = (uint32_t)((uint64_t)(u + 1) * span / nunits)};
    pl->nunits = first + nunits;
    pl->nskips = nskips;
    pl->nolists = nolists;
    pl->nbounds = nbounds;
    pl->otasks = otasks;
    pl->opostings = opostings;
    pl->stasks = stasks;
    pl->dec = dec;
    pl->cand += need.cand;
    pl->dense += need.dense;
    pl->two_level |= need.skip;
    pl->ahead |= need.ahead;
    for (uint32_t j = 0; j < aq->num_terms; j++) pl->postings_in_lists += idx->terms[t[j].term].df;
    pl->npruned += (uint32_t)top;
    pl->bytes = bytes;
    pl->cost = cost;
    pl->blocks_in_lists += in_lists;
    pl->nq++;
    *added = 1;
    return CLS_OK;
}

void plan_abandon(batch_plan *pl) { unslot(pl, 0); }

cls_status plan_finish(batch_plan *pl, plan_layout *lay)
{
    const size_t wt = (size_t)pl->nlists * sizeof(abi_list) / 4, wq = (size_t)pl->nq * sizeof(abi_query) / 4,
                 wr = (size_t)pl->nterms * sizeof(abi_term) / 4, ws = (size_t)pl->nskips * sizeof(abi_skip) / 4,
                 wb = (size_t)pl->nbounds * sizeof(abi_bound) / 4, wu = (size_t)pl->nunits * sizeof(abi_unit) / 4,
                 wo = (size_t)pl->nolists * sizeof(abi_olist) / 4;
    unslot(pl, 0);
    if (wt + wq + wr + ws + wb + wu + wo >= UINT32_MAX) return err_set(CLS_E_DEVMEM, "a batch's descriptors exceed 2^32 words");
    lay->words = wt + wq + wr + ws + wb + wu + wo;
    lay->queries_base = (uint32_t)wt;
    lay->terms_base = (uint32_t)(wt + wq);
    lay->skips_base = (uint32_t)(wt + wq + wr);
    lay->bounds_base = (uint32_t)(wt + wq + wr + ws);
    lay->units_base = (uint32_t)(wt + wq + wr + ws + wb);
    lay->olists_base = (uint32_t)(wt + wq + wr + ws + wb + wu);
    return CLS_OK;
}

void plan_pack(const batch_plan *pl, const plan_layout *lay, uint32_t *dst)
{
    const struct {
        const void *from;
        size_t at, end;
    } parts[] = {{pl->lists, 0, lay->queries_base},
                 {pl->queries, lay->queries_base, lay->terms_base},
                 {pl->terms, lay->terms_base, lay->skips_base},
                 {pl->skips, lay->skips_base, lay->bounds_base},
                 {pl->bounds, lay->bounds_base, lay->units_base},
                 {pl->units, lay->units_base, lay->olists_base},
                 {pl->olists, lay->olists_base, lay->words}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (parts[i].end > parts[i].at) memcpy(dst + parts[i].at, parts[i].from, (parts[i].end - parts[i].at) * 4);
}
