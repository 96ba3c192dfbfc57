/* The batch planner: which queries of a cls_batch go into one device batch, which blocks are
 * decoded where, and the descriptors the kernels read (cl/abi.h), packed (plan_pack) into one
 * host buffer that the engine uploads in one transfer:
 *
 *   lists (abi_list per whole list to decode) | queries (abi_query) | terms (abi_term)
 *   | skips (abi_skip) | bounds (abi_bound) | units (abi_unit) | olists (abi_olist)
 *
 * A whole list is decoded once per batch, however many of its queries use it. So is a list of a
 * query whose lists are decoded ahead (algo_need.ahead), into contributions at its term's weight:
 * once for every query that gives the term the same weight (abi_olist), each of the query's lists
 * with an abi_bound record. Where the algorithm
 * asks for block skipping (algo_need.skip), every list of a query but its driving one (the
 * shortest) that spans more than one block gets a region of its own instead, sized for the most
 * blocks the device can choose in it (abi_skip); so does a one-term query's list where the limits
 * allow block-max pruning (plan_limits.prune). Every query gets the work units its algorithm asks
 * for (algo_need.units, at least one); a query may have a table of its own
 * (algo_need.table_words), placed where its candidates would be.
 *
 * Queries are added one at a time, in batch order, each costed exactly as it is planned (a term
 * that an earlier query of the batch already decodes costs nothing again), until the next one
 * would break a limit: the byte budget of the batch's device buffers, the device's largest
 * allocation for any one buffer, 2^32 decoded slots, the most queries a batch takes, the work
 * the engine's cost model allows a batch (max_cost), what the algorithm's buffers allow
 * (query_algo.fits), or, where
 * lists are cached on the device, the cache's room for the batch's lists together. A query
 * that breaks a limit alone still gets a batch of its own; the engine's buffer allocation then
 * reports the device's refusal.
 *
 * Plain C, no OpenCL: the same plan would serve any device API, and the tests can check it. */
#ifndef CLS_ENGINE_PLAN_H
#define CLS_ENGINE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cl/abi.h"
#include "algo/algo.h"
#include "engine/list_cache.h"

typedef struct plan_limits {
    uint64_t budget;      /* bytes the batch's device buffers may take together */
    uint64_t max_alloc;   /* bytes of the largest single device buffer */
    uint32_t max_queries; /* queries per batch */
    uint64_t max_cost;    /* plan_cost units a batch may add up to once it holds cost_floor
                           * queries (the engine's cost model: clx_search); 0: no limit */
    uint32_t cost_floor;
    uint32_t prune;       /* 1: the search ranks at the BM25 parameters of the blocks' max_score, so
                           * one-term queries of algorithms with block skipping decode only the
                           * blocks that can hold their top k (cl/abi.h: ABI_SKIP_TOP) */
    list_cache *cache;    /* the device's list cache, whose room bounds the batch's lists too;
                           * NULL: the whole index is resident, every list where the file has it */
} plan_limits;

/* Why plan_add left a query for the next batch: the batch would have held more queries than
 * max_queries, more bytes than the budget, more cost than max_cost, or else a buffer larger than
 * the device's largest allocation, a count past 32 bits or more than the list cache holds. */
enum { PLAN_CUT_NONE, PLAN_CUT_QUERIES, PLAN_CUT_BYTES, PLAN_CUT_COST, PLAN_CUT_ALLOC };

typedef struct batch_plan {
    /* set by plan_init */
    const cls_index *idx;
    const query_algo *algo;
    const void *state;   /* the algorithm's (its need and fits read it) */
    plan_limits lim;
    uint32_t kk, P; /* hits kept per query (k, at most the documents), top-k scratch per query */
    uint32_t *slot; /* per index term: decoded slot + 1 in this batch, 0 = not planned (all 0
                     * between batches) */
    int bound_idf;  /* the index's max_score holds the idf (BM25): a bound's scale is weight / idf */
    /* the batch being planned */
    const uint32_t *order; /* the search's query order (NULL: the batch's own) */
    uint64_t q0;         /* its first query, a position in order */
    uint32_t nq;         /* queries */
    uint32_t ntasks;     /* blocks of whole lists to decode */
    uint32_t nlists;     /* abi_list records: whole lists */
    uint32_t nterms;     /* abi_term records */
    uint32_t nskips;     /* abi_skip records */
    uint32_t nbounds;    /* abi_bound records */
    uint32_t nunits;     /* abi_unit records */
    uint32_t nolists;    /* abi_olist records: lists decoded ahead */
    uint64_t otasks;     /* their blocks, which are also their slots / block_size */
    uint64_t opostings;  /* their postings */
    uint32_t npruned;    /* one-term queries pruned by block maxima (ABI_SKIP_TOP) */
    uint64_t stasks;     /* selected-task slots of the skip regions */
    uint64_t blocks_in_lists; /* blocks of the batch's lists: a whole list once, a skipped list
                               * once per query (decoding without skipping would take them all) */
    uint64_t dec;        /* decoded slots (docIDs and frequencies each) */
    uint64_t cand;       /* candidate slots */
    uint32_t dense;      /* accumulator rows */
    uint32_t two_level;  /* some query asked for block skipping: top-k runs per work unit first */
    uint32_t ahead;      /* the batch's lists are decoded ahead (algo_need.ahead) */
    uint32_t ntables;    /* queries with a table of their own (algo_need.table_words) */
    uint64_t table_words; /* their tables' words */
    uint64_t postings_in_lists; /* postings of the batch's lists, once per query and list */
    uint64_t bytes;      /* device bytes the batch's buffers need, as costed */
    uint64_t cost;       /* its queries' plan_cost together */
    uint32_t ntouched;   /* terms slotted in this batch */
    uint32_t cut;        /* the limit that kept the last query plan_add saw out (PLAN_CUT_*) */
    /* host arrays, reused from batch to batch (capacities only grow) */
    abi_list *lists;
    abi_query *queries;
    abi_term *terms;
    abi_skip *skips;
    abi_bound *bounds;
    abi_unit *units;
    abi_olist *olists;
    uint32_t *olist_next; /* per abi_olist: 1 + the next one of the same term (another weight), 0: none */
    uint32_t *touched;
    uint32_t *term_skip; /* per term of the query being added: 1 + its abi_skip, or 0 */
    size_t lists_cap, queries_cap, terms_cap, skips_cap, bounds_cap, term_skip_cap, units_cap, olists_cap, olist_next_cap;
} batch_plan;

/* What query q (its terms t) costs the device under algo, in postings its kernels walk: with
 * block skipping about its driving list once per term, otherwise every posting of every list;
 * a one-term query pruned by block maxima (prune_k: the hits kept, 0 where the search does not
 * prune) its block heads and about two blocks a hit; a dense accumulator row adds the documents
 * it zeroes and ranks. 0 for a query that matches nothing. The engine orders a search's queries
 * by it (balanced batches, Wu et al.) and sizes batches by it (max_cost). */
uint64_t plan_cost(const cls_index *idx, const query_algo *algo, const void *state, const batch_query *q,
                   const batch_term *t, uint32_t prune_k, uint64_t max_alloc);

/* The top-k scratch slots a group needs for k hits (topk.cl sorts a power of two). */
uint32_t plan_scratch(uint32_t k);

/* Sets up a planner for idx (allocates the per-term slots). */
cls_status plan_init(batch_plan *pl, const cls_index *idx);
void plan_free(batch_plan *pl);

/* Starts a batch at position q0 of order (a permutation of the cls_batch's queries; NULL: their
 * own order) for a search with algo, kk hits per query and limits lim. */
void plan_begin(batch_plan *pl, const query_algo *algo, const void *state, uint32_t kk, const plan_limits *lim,
                const uint32_t *order, uint64_t q0);
/* The cls_batch index of the batch's i-th query. */
uint64_t plan_query(const batch_plan *pl, uint32_t i);
/* Offers the next query of bt to the batch: *added is 1 when it was added, 0 when the batch is
 * full (never so for its first query). Fails when out of memory or when a query alone needs 2^32
 * decoded slots. */
cls_status plan_add(batch_plan *pl, const cls_batch *bt, int *added);
/* Where the records lie in the packed upload, in 32-bit words. */
typedef struct plan_layout {
    size_t words;
    uint32_t queries_base, terms_base, skips_base, bounds_base, units_base, olists_base; /* the lists start at 0 */
} plan_layout;

/* Lays out the upload (*lay) and clears the term slots. */
cls_status plan_finish(batch_plan *pl, plan_layout *lay);
/* Packs the upload, lay->words words, into dst (the engine's pinned copy, which travels as is). */
void plan_pack(const batch_plan *pl, const plan_layout *lay, uint32_t *dst);
/* A batch that will not run (its planning or another batch failed): clears the term slots, so
 * that the next batch planned starts clean. */
void plan_abandon(batch_plan *pl);

#endif
