/* A query algorithm is a module: how the documents a query matches are found and scored, once on
 * an OpenCL device and once in plain C (its reference twin, the oracle the device path is tested
 * against). Each module is one file src/query/<name>.c with its kernels in cl/<name>.cl, and one
 * row of the table in src/query/algos.c; the engines iterate that table and know no algorithm by
 * name. cls_mode (include/clsearch.h) numbers the rows.
 *
 * What every algorithm shares, and so is not its business: the batch planner (src/query/plan.c:
 * which queries go into a device batch, which blocks are decoded, the descriptors of cl/abi.h),
 * the upload, decoding, top-k selection and the download (src/device/dev_engine.c), and, on the
 * reference side, decoding and per-document accumulation (src/query/ref_engine.c). An algorithm
 * says what each query needs from the planner, enqueues its kernels between decoding and top-k,
 * and in plain C picks the matches from the accumulated scores.
 *
 * Adding an algorithm: a value in cls_mode, src/query/<name>.c defining a query_algo, its kernels
 * in cl/<name>.cl, its row in algos.c, and its test in tests/test_query.c. */
#ifndef CLS_QUERY_ALGO_H
#define CLS_QUERY_ALGO_H

#include <stdint.h>

#include "query/batch.h"

/* What one query asks of the batch planner. */
typedef struct algo_need {
    uint32_t flags; /* abi_query flags (cl/abi.h); with ABI_QF_EMPTY nothing of the query is decoded */
    uint32_t cand;  /* candidate slots: docIDs and scores of documents holding every term */
    uint32_t skip;  /* 1: block skipping for the query's lists other than its driving one (and,
                     * where the search allows, block-max pruning of a one-term query's list),
                     * and top-k in two levels over its work units (and.c) */
    uint32_t dense; /* 1: one accumulator row of num_docs floats (an algorithm asks it of every
                     * query or of none: its kernels index rows by query) */
    uint32_t parts; /* 1: the query is scored by docID-range partitions (or.c): nothing of its lists
                     * is decoded ahead, each list gets an abi_skip of kind ABI_SKIP_BOUND, and the
                     * batch holds the partitions' bounds, work queue and candidate pool (asked of
                     * every query or of none) */
} algo_need;

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

struct dev_batch; /* src/device/dev.h */

typedef struct query_algo {
    const char *name;           /* "or", "and", ... as -m takes it */
    const char *help;           /* one line for the command's help */
    const char *kernel_file;    /* cl/<name>.cl: built into the engine's query program */
    const char *const *kernels; /* the kernels that file defines (NULL-terminated) */
    const char *decode_file;    /* NULL, or cl/<file>.cl of kernels that decode blocks themselves:
                                 * built into the decode program, after the codec's fragment */
    const char *const *decode_kernels; /* the kernels that file defines (NULL-terminated) */
    const char *describe;       /* its kernels in a few words, for the engine's -v description */
    /* The planner's questions about query q, whose shortest known list holds shortest_df
     * postings (0 when it has no known term). */
    void (*need)(const batch_query *q, uint32_t shortest_df, algo_need *n);
    /* Device: enqueue the kernels that turn the batch's decoded lists into what top-k reads. */
    cls_status (*launch)(struct dev_batch *b);
    /* Reference: writes the query's matches into out (room for num_docs), in any order;
     * returns how many. */
    uint32_t (*ref)(const ref_query *rq, ref_hit *out);
} query_algo;

/* The table (algos.c), in cls_mode order. */
const query_algo *const *query_algos(size_t *n);
/* The algorithm of a mode, or NULL for a value no row has. */
const query_algo *query_algo_for(int mode);

/* Building blocks that modules share (defined in and.c and or.c). */
/* plan_units: the batch's work units' shares of their driving lists, planned on the device. */
cls_status algo_and_units(struct dev_batch *b);
/* plan_units, then intersect_and: each work unit's documents holding every term of its query,
 * in docID order, at cand_offset + begin of the batch's candidate buffer; their count in ucount. */
cls_status algo_and_intersect(struct dev_batch *b);
/* score_or: each query's dense row of BM25 sums (0: no term holds the document). */
cls_status algo_or_accumulate(struct dev_batch *b);

#endif
