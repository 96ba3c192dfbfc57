/* A query algorithm is a module: how the documents a query matches are found and scored, once on
 * an OpenCL device and once in plain C (its reference twin, the oracle the device path is tested
 * against). Each module is one file src/algo/<name>.c with its kernels in cl/<name>.cl (and, for
 * kernels that decode blocks themselves, a file built with the index's decoder), and one row of
 * the table in src/algo/algos.c; the executors iterate that table and know no algorithm by name.
 * cls_mode (include/clsearch.h) numbers the rows.
 *
 * An algorithm owns everything of its own: its state and device buffers (create, free), its
 * search-level rules (prepare), what each query asks of the batch planner (need) and what a batch
 * may hold (fits), its kernels between decoding and top-k (size, launch), its result words after
 * top-k's (extra_words, collect), the queries it asks to run again (rerun), its counters and its
 * line of the engine's description.
 *
 * What every algorithm shares, and so is not its business: the batch planner (src/engine/plan.c:
 * which queries go into a device batch, which blocks are decoded, the descriptors of cl/abi.h),
 * the batch's stages before and after it (src/engine/dev_engine.c: upload, decode, top-k, read),
 * and, on the reference side, decoding and per-document accumulation (src/engine/ref_engine.c).
 *
 * Adding an algorithm: a value in cls_mode, src/algo/<name>.c defining a query_algo, its kernels
 * in cl/<name>.cl, its row in algos.c, and its test in tests/test_query.c. The host executor
 * (src/engine/host_engine.c) runs its own document-at-a-time twin of each mode and refuses a mode
 * it has none for. */
#ifndef CLS_ALGO_ALGO_H
#define CLS_ALGO_ALGO_H

#include <stdint.h>

#include "algo/topk.h"
#include "cl/abi.h"
#include "device/dev.h"
#include "index/index.h"
#include "query/batch.h"

/* What an algorithm's state is made for: the device (NULL: planning only, as the reference
 * executor and the planner's tests use it) and the index as it lives there. */
typedef struct algo_env {
    dev_ctx *dc;
    const cls_index *idx;
    const char *decode_opts;  /* the decoder program's build options (for a decode_file program) */
    cl_mem words, blocks;     /* the index's postings and block records on the device, */
    cl_mem norms;             /* the documents' BM25 norms at the search's k1 and b */
    int cached;               /* 1: words and blocks are the list cache's arenas (only some lists) */
} algo_env;

/* What a search asks: prepare's view. */
typedef struct algo_search {
    uint32_t kk;       /* hits kept per query (k, at most the documents) */
    float k1, b;
    int prune;         /* the search ranks at the BM25 parameters of the blocks' max_score */
    cls_counter *counters; /* the algorithm's own, in its counters' order (zeroed; prepare may set) */
} algo_search;

/* A query as the planner sees it. */
typedef struct algo_query {
    const batch_query *q;
    uint32_t shortest_df;      /* postings of its shortest known list (0: no known term) */
    uint32_t shortest_blocks;  /* that list's blocks */
    uint64_t sum_df;           /* postings of all its known lists */
    uint64_t max_alloc;        /* bytes of the largest buffer the batch may have */
} algo_query;

/* What one query asks of the batch planner. */
typedef struct algo_need {
    uint32_t flags; /* abi_query flags (cl/abi.h); with ABI_QF_EMPTY nothing of the query is decoded */
    uint32_t cand;  /* candidate slots: docIDs and scores of documents holding every term */
    uint32_t skip;  /* 1: block skipping for the query's lists other than its driving one (and,
                     * where the search allows, block-max pruning of a one-term query's list),
                     * and top-k in two levels over its work units */
    uint32_t dense; /* 1: one accumulator row of num_docs floats (asked of every query or of none:
                     * kernels index rows by query) */
    uint32_t ahead; /* 1: each of its lists is decoded ahead, into contributions at its term's weight
                     * (abi_olist, once for every query of the batch giving the term that weight),
                     * and gets an abi_bound record; nothing else of it is decoded (asked of every
                     * query or of none) */
    uint32_t units; /* work units (abi_unit): 0 or 1, one; else this many, splitting [0, unit_span)
                     * into ranges of one size, in order (a span of 0: the device sets their
                     * shares) */
    uint32_t unit_span;
    uint64_t table_words; /* words of a table of its own its kernels keep at abi_query.cand_offset
                           * (instead of candidates); 0: none */
    uint64_t bytes;       /* device bytes of the algorithm's own buffers for the query */
    uint64_t block_bytes; /* ... for each block it decodes ahead that the batch did not have yet */
    uint64_t list_bytes;  /* ... for each list it decodes ahead that the batch did not have yet */
    uint32_t priced;      /* 1: cost is the query's cost (plan_cost), else the planner's estimate */
    uint64_t cost;
} algo_need;

/* A batch's totals with one more query, for fits. */
typedef struct algo_totals {
    uint64_t nq, nterms;
    uint64_t ahead_blocks; /* blocks decoded ahead (abi_olist records' blocks) */
    uint64_t ahead_lists;  /* abi_olist records */
    uint64_t max_alloc;    /* bytes of the device's largest buffer */
} algo_totals;

/* The reference twin's view of one query once every term's postings are accumulated: per
 * document d, acc[d] is the BM25 sum (terms added in query order from 0) and count[d] the number
 * of the query's terms whose list holds d. */
typedef struct ref_query {
    const batch_query *q;
    uint32_t num_docs;
    const float *acc;
    const uint32_t *count;
} ref_query;

/* A match of the reference engine. Hits rank by tier (higher first), then score (higher first),
 * then docID (smaller first); tiers are 0 except where an algorithm ranks classes of documents
 * (and-or: documents holding every term before the others). */
typedef struct ref_hit {
    float s;
    uint32_t d;
    uint32_t tier;
} ref_hit;

/* One planned batch on its way through the kernels: what an algorithm's stage reads, and what
 * its launch sets for top-k. */
typedef struct algo_batch {
    dev_ctx *dc;
    topk_state *topk;              /* the top-k stage (an algorithm may rank in two levels) */
    const cls_index *idx;
    uint32_t nq, num_docs;
    uint32_t kk, P;                /* hits kept per query; top-k scratch per group */
    cl_mem words, blocks, norms;   /* the index on the device; the search's norms */
    cl_mem in;                     /* the upload: lists | queries | terms | skips | bounds | units | olists */
    cl_uint queries_base, terms_base, skips_base, bounds_base, units_base, olists_base; /* word offsets in `in` */
    cl_uint nterms, nskips, nbounds, nunits, nolists;  /* records of each kind */
    cl_uint otasks;                /* blocks of the abi_olists */
    cl_uint nstasks;               /* selected-task slots of the skip regions */
    uint64_t cand;                 /* candidate slots of the batch */
    uint32_t two_level;            /* some query asked for block skipping */
    uint32_t ntables;              /* queries with a table of their own (algo_need.table_words) */
    uint64_t table_words;          /* their words together */
    const abi_bound *bounds;       /* the abi_bound records (host copy) */
    cl_mem docs, freqs;            /* the whole lists, decoded (abi_list) */
    cl_mem out;                    /* the results (cl/abi.h: ABI_OUT_*), then the algorithm's words */
    cl_uint extra_at;              /* word of out where the algorithm's extra words start */
    const uint32_t *order;         /* the batch's i-th query is the search's order[q0 + i] */
    uint64_t q0;
    topk_input rank;               /* set by launch: what top-k ranks, one group a query */
} algo_batch;

/* The cls_batch index of a batch's i-th query. */
static inline uint64_t algo_batch_query(const algo_batch *b, uint32_t i)
{
    return b->order ? b->order[b->q0 + i] : b->q0 + i;
}

typedef struct query_algo {
    const char *name;           /* "or", "and", ... as -m takes it */
    const char *help;           /* one line for the command's help */
    const char *kernel_file;    /* cl/<name>.cl: built into the engine's query program */
    const char *const *kernels; /* the kernels that file defines (NULL-terminated) */
    const char *decode_file;    /* NULL, or cl/<file>.cl of kernels that decode blocks themselves,
                                 * built with the codec's fragment by the algorithm (kernel_variants
                                 * compiles it with decode_options) */
    const char *describe;       /* its kernels in a few words, for the engine's -v description */
    const char *const *counters; /* names of its counters (NULL-terminated; NULL: none) */

    /* Its state: made at engine creation (env->dc NULL: planning only), freed with the engine.
     * NULL create: no state. */
    cls_status (*create)(const algo_env *env, void **state);
    void (*free)(void *state);
    /* The build options its decode_file adds to the decoder's (NULL: none). */
    void (*decode_options)(const void *state, const clx_params *prm, uint32_t block_size, size_t max_work_group,
                           char *buf, size_t len);
    /* How it runs on this engine's collection, for -v (NULL: nothing to add). */
    void (*explain)(const void *state, char *buf, size_t len);
    /* Before a search's batches: its rules for the search (NULL: none). */
    cls_status (*prepare)(void *state, const algo_search *s);
    /* The planner's questions about query q (state NULL: the reference's, flags alone matter). */
    void (*need)(const void *state, const algo_query *q, algo_need *n);
    /* 1 when a batch of these totals fits the device (NULL: always). */
    int (*fits)(const void *state, const algo_totals *t);
    /* Device: grows its buffers for the batch, then enqueues the kernels that turn the batch's
     * decoded lists into what top-k reads (b->rank). */
    cls_status (*launch)(void *state, algo_batch *b);
    /* Result words it writes after top-k's (from b->extra_at; NULL: none). */
    uint32_t (*extra_words)(const void *state, const algo_batch *b);
    /* After the batch's read: its extra words, *blocks_decoded the blocks it decoded beyond the
     * planner's lists, its counters (NULL: nothing to collect). */
    cls_status (*collect)(void *state, const algo_batch *b, const uint32_t *extra, uint64_t *blocks_decoded,
                          cls_counter *counters);
    /* After the search's batches: the queries (cls_batch indexes) to run again, having raised what
     * they outgrew; *n 0: none (NULL: never). */
    cls_status (*rerun)(void *state, const uint32_t **queries, uint64_t *n);
    /* Reference: writes the query's matches into out (room for num_docs), in any order;
     * returns how many. */
    uint32_t (*ref)(const ref_query *rq, ref_hit *out);
} query_algo;

/* The table (algos.c), in cls_mode order. */
const query_algo *const *query_algos(size_t *n);
/* The algorithm of a mode, or NULL for a value no row has. */
const query_algo *query_algo_for(int mode);
/* The most counters any algorithm has. */
size_t query_algo_max_counters(void);

#endif
