/* The batch planner (plan.h). */
#include "query/plan.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "index/bm25.h"
#include "index/index.h"
#include "util/err.h"
#include "util/vec.h"

/* OR by hashing: postings a work-group of or_hash adds, about (cl/or_parts.cl) */
#define PLAN_HASH_SHARE 4096u

cls_status plan_init(batch_plan *pl, const cls_index *idx)
{
    memset(pl, 0, sizeof *pl);
    pl->idx = idx;
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
    uint64_t rows = need->dense ? idx->num_docs : 0;
    if (need->flags & ABI_QF_EMPTY) return rows;
    /* scored by partitions: the block heads of its lists and the blocks pruning leaves, which the
     * engine's measured rate prices (a fraction of the postings, the more so the longer the lists) */
    if (need->parts) return sum / 8 + (sum + idx->block_size - 1) / idx->block_size;
    if (need->skip && prune_k && num_terms == 1 && shortest_blocks > prune_k) {
        uint64_t top = 2 * (uint64_t)prune_k * idx->block_size;
        return shortest_blocks + (top < shortest ? top : shortest) + rows;
    }
    return (need->skip ? shortest * num_terms : sum) + rows;
}

uint64_t plan_cost(const cls_index *idx, const query_algo *algo, const batch_query *q, const batch_term *t,
                   uint32_t prune_k)
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
    algo->need(q, (uint32_t)(q->num_terms ? shortest : 0), &need);
    return need_cost(idx, &need, q->num_terms ? shortest : 0, blocks, sum, q->num_terms, prune_k);
}

uint32_t plan_scratch(uint32_t k)
{
    uint32_t p = 1;
    while (p < k) p <<= 1;
    return p;
}

void plan_begin(batch_plan *pl, const query_algo *algo, uint32_t kk, const plan_limits *lim, const uint32_t *order,
                uint64_t q0)
{
    pl->algo = algo;
    pl->kk = kk;
    pl->P = plan_scratch(kk);
    pl->lim = *lim;
    pl->order = order;
    pl->q0 = q0;
    pl->nq = pl->ntasks = pl->nlists = pl->nterms = pl->nskips = pl->nunits = pl->dense = pl->ntouched = pl->two_level = 0;
    pl->npruned = pl->parts = pl->nolists = pl->nhash = 0;
    pl->hwords = 0;
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
    /* the driving term: the shortest list, the first of them on a tie (and.cl's rule) */
    uint32_t drive = 0;
    uint64_t sum = 0; /* postings of all its lists, for its cost */
    for (uint32_t j = 0; j < q->num_terms; j++) {
        sum += idx->terms[t[j].term].df;
        if (idx->terms[t[j].term].df < idx->terms[t[drive].term].df) drive = j;
    }
    uint32_t shortest = q->num_terms ? idx->terms[t[drive].term].df : 0;
    algo_need need = {0};
    pl->algo->need(q, shortest, &need);
    if (need.parts && !pl->lim.parts) { /* the search keeps a dense row instead (clx_search) */
        need.parts = 0;
        need.dense = 1;
    }
    int empty = (need.flags & ABI_QF_EMPTY) != 0;
    if (empty) need.cand = 0; /* a dense row is still zeroed and ranked (empty) by the kernels */
    /* a query of few postings scored by partitions meets about one partition a posting, a
     * group's pass each: hashed instead (or.c: the rule), in a table of at least twice its
     * postings, at least 256 entries of a key and a sum, by one work-group (a unit) per
     * PLAN_HASH_SHARE postings, each adding the documents of a range of partitions */
    int hash = need.parts && !empty && pl->lim.hash_max && sum <= pl->lim.hash_max;
    uint32_t hlog = 8;
    while (hash && ((uint64_t)1 << hlog) < 2 * sum) hlog++;
    if (hash && ((uint64_t)8 << hlog) > pl->lim.max_alloc) hash = 0; /* a table the device cannot hold */
    const uint32_t chunk = pl->lim.chunk ? pl->lim.chunk : UINT32_MAX;
    uint32_t nunits = need.cand ? (uint32_t)(((uint64_t)need.cand + chunk - 1) / chunk) : 1;
    if (hash) {
        uint64_t g = (sum + PLAN_HASH_SHARE - 1) / PLAN_HASH_SHARE;
        nunits = (uint32_t)(g < 1 ? 1 : g > pl->lim.parts ? pl->lim.parts : g);
    }

    if (!vec_reserve(&pl->queries, &pl->queries_cap, (size_t)pl->nq + 1, sizeof *pl->queries) ||
        !vec_reserve(&pl->terms, &pl->terms_cap, (size_t)pl->nterms + q->num_terms, sizeof *pl->terms) ||
        !vec_reserve(&pl->skips, &pl->skips_cap, (size_t)pl->nskips + q->num_terms, sizeof *pl->skips) ||
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
    uint32_t ntasks = pl->ntasks, nskips = pl->nskips, nolists = pl->nolists;
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
        int skip = !need.parts && (top || (need.skip && j != drive && te->num_blocks > 1));
        if (cache && (need.parts || skip || !pl->slot[t[j].term])) { /* its list must be on the device for the batch */
            int fits;
            if ((s = lc_pin(cache, t[j].term, &first_block, &fits)) != CLS_OK || !fits) {
                if (s == CLS_OK && pl->nq == 0)
                    s = err_set(CLS_E_DEVMEM, "query %s needs more room for its posting lists than the device's list "
                                "cache has (%llu words, %llu block records; give the engine more device memory)",
                                cls_batch_qid(bt, (size_t)qi), (unsigned long long)cache->words.size,
                                (unsigned long long)cache->blocks.size);
                return not_added(pl, ntouched0, nloads0, s);
            }
        }
        if (need.parts) { /* decoded ahead into contributions (or_decode), once for every query of
                           * the batch that gives the term this weight; its slot: 1 + that abi_olist */
            float w = bm25_weight(idx, t[j].term, t[j].weight);
            float scale = pl->lim.bound_idf ? (float)((double)w / (double)bm25_idf(idx->num_docs, te->df)) : w;
            uint32_t ol = pl->slot[t[j].term], last = 0;
            while (ol && pl->olists[ol - 1].weight != w) { /* the term's lists at other weights */
                last = ol;
                ol = pl->olist_next[ol - 1];
            }
            if (!ol) {
                if ((otasks + te->num_blocks) * B >= UINT32_MAX) { /* slots are 32-bit on the device */
                    if (pl->nq == 0)
                        s = err_set(CLS_E_DEVMEM, "query %s decodes more than 2^32 postings", cls_batch_qid(bt, (size_t)qi));
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
            abi_skip *sk = &pl->skips[nskips];
            *sk = (abi_skip){.query = pl->nq, .first_block = first_block, .num_blocks = te->num_blocks,
                             .task_base = ol - 1, .max_tasks = pl->olists[ol - 1].task_base,
                             .dst_base = pl->nterms + j, .kind = ABI_SKIP_BOUND};
            memcpy(&sk->k, &scale, 4);
            pl->term_skip[j] = ++nskips;
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
        if (pl->nq == 0) s = err_set(CLS_E_DEVMEM, "query %s decodes more than 2^32 postings", cls_batch_qid(bt, (size_t)qi));
        return not_added(pl, ntouched0, nloads0, s);
    }
    const uint64_t hwords = pl->hwords + (hash ? (uint64_t)2 << hlog : 0);
    uint64_t bytes = pl->bytes + (hwords - pl->hwords) * 4 + (uint64_t)pl->kk * 8 + (uint64_t)pl->P * 8 + sizeof(abi_query) + 16 +
                     (uint64_t)q->num_terms * sizeof(abi_term) + (uint64_t)(ntasks - pl->ntasks) * sizeof(abi_task) +
                     (uint64_t)(pl->ntouched - ntouched0) * sizeof(abi_list) +
                     (uint64_t)(nskips - pl->nskips) * (sizeof(abi_skip) + 4) +
                     (uint64_t)nunits * (sizeof(abi_unit) + 12 + (need.skip ? (uint64_t)pl->kk * 8 + (uint64_t)pl->P * 8 : 0)) +
                     (stasks - pl->stasks) * sizeof(abi_task) + (dec - pl->dec) * 8 + (uint64_t)need.cand * 8 +
                     (uint64_t)need.dense * idx->num_docs * 4 +
                     (need.parts ? ((uint64_t)q->num_terms + 2) * pl->lim.parts * 4 + (uint64_t)pl->lim.seeds * 4 +
                                       (uint64_t)pl->lim.pool * 8 + 16 + ABI_OR_ROUNDS * 4 +
                                       (otasks - pl->otasks) * (B * 6 + 8) +
                                       (uint64_t)(nolists - pl->nolists) * (((uint64_t)pl->lim.parts + 1) * 4 + sizeof(abi_olist))
                                 : 0);
    uint64_t rows = pl->dense + need.dense, nq = (uint64_t)pl->nq + 1;
    uint64_t cost = pl->cost + need_cost(idx, &need, shortest, q->num_terms ? idx->terms[t[drive].term].num_blocks : 0, sum,
                                         q->num_terms, pl->lim.prune ? pl->kk : 0);
    const plan_limits *L = &pl->lim;
    pl->cut = nq > L->max_queries                                                 ? PLAN_CUT_QUERIES
              : bytes > L->budget                                                 ? PLAN_CUT_BYTES
              : L->max_cost && pl->nq >= L->cost_floor && cost > L->max_cost ? PLAN_CUT_COST
                                                                                  : PLAN_CUT_ALLOC;
    if (pl->nq > 0 && (pl->cut != PLAN_CUT_ALLOC || dec * 4 > L->max_alloc ||
                       stasks * sizeof(abi_task) > L->max_alloc || (pl->cand + need.cand) * 4 > L->max_alloc ||
                       rows * idx->num_docs * 4 > L->max_alloc || nq * pl->P * 4 > L->max_alloc ||
                       (need.parts && ((uint64_t)pl->nterms + q->num_terms) * L->parts * 4 > L->max_alloc) ||
                       (need.parts && (otasks * B * 4 > L->max_alloc || (uint64_t)nolists * (L->parts + 1) * 4 > L->max_alloc)) ||
                       hwords >= UINT32_MAX || hwords * 4 > L->max_alloc ||
                       (need.parts && (nq * L->parts >= UINT32_MAX || nq * L->pool >= UINT32_MAX ||
                                       nq * L->parts * 4 > L->max_alloc || nq * L->pool * 4 > L->max_alloc))))
        return not_added(pl, ntouched0, nloads0, CLS_OK);
    pl->cut = PLAN_CUT_NONE;
    /* It fits: write its lists and descriptors. */
    if (!vec_reserve(&pl->lists, &pl->lists_cap, (size_t)pl->nlists + (pl->ntouched - ntouched0) + 1, sizeof *pl->lists))
        return not_added(pl, ntouched0, nloads0, err_set(CLS_E_NOMEM, "out of memory for the batch plan"));
    for (uint32_t i = ntouched0; i < pl->ntouched && !need.parts; i++) { /* parts: slots are abi_olists */
        const idx_term *te = &idx->terms[pl->touched[i]];
        uint32_t at = pl->slot[pl->touched[i]] - 1;
        pl->lists[pl->nlists++] =
            (abi_list){.first_block = cache ? cache->e[pl->touched[i]].block_pos : te->first_block, .num_blocks = te->num_blocks, .dst = at, .task_base = pl->ntasks};
        pl->ntasks += te->num_blocks;
    }
    assert(pl->ntasks == ntasks);
    abi_query *aq = &pl->queries[pl->nq];
    *aq = (abi_query){.term_start = pl->nterms, .num_terms = empty ? 0 : q->num_terms,
                      .cand_offset = hash ? (uint32_t)pl->hwords : (uint32_t)pl->cand,
                      .flags = need.flags | (hash ? ABI_QF_HASH | hlog << 8 : 0u)};
    pl->hwords = hwords;
    pl->nhash += (uint32_t)hash;
    for (uint32_t j = 0; j < aq->num_terms; j++) {
        const idx_term *te = &idx->terms[t[j].term];
        uint32_t sk = pl->term_skip[j];
        pl->terms[pl->nterms++] = (abi_term){
            .list_offset = sk ? pl->skips[sk - 1].dst_base : pl->slot[t[j].term] - 1,
            .df = te->df,
            .weight = bm25_weight(idx, t[j].term, t[j].weight),
            .skip = sk};
    }
    /* as many units as the driving list's df asks for; plan_units (and.cl) gives each its share
     * on the device, where the list's length is known once its blocks are chosen. A hashed
     * query's units split the partitions into ranges of one size, in order (or_hash) */
    for (uint32_t u = 0, first = pl->nunits; u < nunits; u++)
        pl->units[pl->nunits++] = (abi_unit){.query = pl->nq, .first_unit = first,
                                             .begin = hash ? (uint32_t)((uint64_t)u * pl->lim.parts / nunits) : 0,
                                             .end = hash ? (uint32_t)((uint64_t)(u + 1) * pl->lim.parts / nunits) : 0};
    pl->nskips = nskips;
    pl->nolists = nolists;
    pl->otasks = otasks;
    pl->opostings = opostings;
    pl->stasks = stasks;
    pl->dec = dec;
    pl->cand += need.cand;
    pl->dense += need.dense;
    pl->two_level |= need.skip;
    pl->parts |= need.parts;
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
                 wu = (size_t)pl->nunits * sizeof(abi_unit) / 4, wo = (size_t)pl->nolists * sizeof(abi_olist) / 4;
    unslot(pl, 0);
    if (wt + wq + wr + ws + wu + wo >= UINT32_MAX) return err_set(CLS_E_DEVMEM, "a batch's descriptors exceed 2^32 words");
    lay->words = wt + wq + wr + ws + wu + wo;
    lay->queries_base = (uint32_t)wt;
    lay->terms_base = (uint32_t)(wt + wq);
    lay->skips_base = (uint32_t)(wt + wq + wr);
    lay->units_base = (uint32_t)(wt + wq + wr + ws);
    lay->olists_base = (uint32_t)(wt + wq + wr + ws + wu);
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
                 {pl->skips, lay->skips_base, lay->units_base},
                 {pl->units, lay->units_base, lay->olists_base},
                 {pl->olists, lay->olists_base, lay->words}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (parts[i].end > parts[i].at) memcpy(dst + parts[i].at, parts[i].from, (parts[i].end - parts[i].at) * 4);
}
