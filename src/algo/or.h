/* OR (or.c): its state, which the tests read and steer, and the dense accumulation it lends
 * and-or. */
#ifndef CLS_ALGO_OR_H
#define CLS_ALGO_OR_H

#include "algo/algo.h"

/* OR's state on one engine. The search's rule and limits (prepare), its device buffers, and the
 * queries whose candidate pool overflowed. */
typedef struct or_state {
    algo_env env;               /* the device (env.dc NULL: planning only) and the index there */
    char opts[448];             /* its decode program's options: the decoder's and its own */
    cl_program prog;            /* or_parts.cl with the decoder, built when a search first needs it */
    unsigned hash_wg;           /* or_hash's work-items a group (OR_HASH_WG) */
    /* the search in progress (prepare) */
    uint32_t parts;             /* docID-range partitions of the collection; 0: a dense row a query */
    uint32_t seeds;             /* seed partitions a query scores first */
    uint32_t pool;              /* candidate slots a query's partitions may offer */
    uint32_t pool_max;          /* every document of every partition */
    uint32_t hash_max;          /* a query of at most this many postings is hashed (0: none) */
    cl_uint bsrc;               /* the bounds the search prunes with (ABI_BOUND_*) */
    /* test knobs */
    uint32_t pool_hint;         /* candidate slots a pool starts with (0: the rule's) */
    uint32_t bound_ways;        /* or_bounds' groups per term (0: the rule's) */
    int force_parts;            /* partitions whatever the collection's size */
    /* device buffers: per query term its partitions' bounds, per query their sums, the work queue,
     * the seeds, the control words, the offers' histograms, the queries of each round; the lists
     * decoded ahead: their blocks' tasks, contributions, offsets and per partition their first
     * slots; the hashed queries' tables; the candidate pool and its segments; a dense row a query */
    dbuf m, ub, items, seed, ctl, hist, act, tasks, c, o, s, htab, cand, cscore, qseg, acc;
    cl_mem bmax;                /* block maxima at weight 1 (ABI_BOUND_TABLE), one float a block */
    float bmax_k1, bmax_b;      /* the parameters bmax holds (-1: none yet) */
    uint32_t *retry;            /* queries whose candidate pool overflowed, to run again */
    size_t nretry, retry_cap;
    uint32_t retry_pool;        /* the most candidates one of them offered */
} or_state;

/* Test knobs: a pool of slots candidates to start with (0: the rule's); or_bounds' groups per term
 * (0: the rule's); partitions even where the collection would take the dense row. */
void or_set_pool(or_state *s, uint32_t slots);
void or_set_bound_ways(or_state *s, uint32_t ways);
void or_force_partitions(or_state *s, int force);

/* score_or (cl/or.cl): each query's dense row of BM25 sums into acc (0: no term holds the document). */
cls_status or_accumulate(algo_batch *b, cl_mem acc);

#endif
