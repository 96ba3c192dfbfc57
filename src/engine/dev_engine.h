/* The device executor's insides (dev_engine.c), for the files that work with them: the tests'
 * and benchmarks' hooks that run one kernel family alone (tests/kernel_hooks.c,
 * bench/bench_hooks.c) and the tests that read a batch's plan. */
#ifndef CLS_ENGINE_DEV_ENGINE_H
#define CLS_ENGINE_DEV_ENGINE_H

#include "algo/algo.h"
#include "engine/engine.h"
#include "engine/list_cache.h"
#include "engine/plan.h"

/* Queries per device batch: at least DEV_FIRST_BATCH where the byte budget allows, at most
 * DEV_MAX_BATCH; in between, as many as the device gets through in the target time
 * (DEV_BATCH_SECONDS unless the engine was given another) at the rate the cost model measured.
 * The floor, because a batch's time is no guide below it: small batches leave the device part
 * idle, the more so where top-k dominates; cheap queries gain from batches above it
 * (docs/PERFORMANCE.md, "Conjunctive queries at scale: the list cache, the batch cost model"). */
#define DEV_MAX_BATCH 4096u
#define DEV_FIRST_BATCH 1024u
#define DEV_BATCH_SECONDS 0.025

/* The executor's own counters of the last search (clx_counters, -v), by id; dev_engine.c's table
 * names them. Then the list cache's (with the cache only), then the top-k stage's launches, then
 * the algorithm's (query_algo.counters). */
enum dev_counter {
    DEV_C_QUERIES,                 /* queries */
    DEV_C_BLOCKS_IN_LISTS,         /* blocks in their lists */
    DEV_C_BLOCKS_DECODED,          /* blocks decoded */
    DEV_C_COST_RATE,               /* the cost model's rate */
    DEV_C_QUERIES_PRUNED,          /* queries pruned by block maxima */
    DEV_C_POSTINGS_IN_LISTS,       /* postings in their lists */
    DEV_C_POSTINGS_DECODED,        /* postings decoded ahead */
    DEV_C_QUERIES_RERUN,           /* queries run again at the algorithm's request */
    DEV_C_BATCHES_CUT,             /* batches closed at each planner limit: + PLAN_CUT_* - PLAN_CUT_QUERIES */
    DEV_C_BATCHES_CUT_LAST = DEV_C_BATCHES_CUT + PLAN_CUT_ALLOC - PLAN_CUT_QUERIES,
    DEV_C_TOPK,                    /* launches of each top-k kernel (topk_kind_names) */
    DEV_C_TOPK_LAST = DEV_C_TOPK + TOPK_KINDS - 1,
    DEV_C_OWN,                     /* the executor's own counters end here */
    DEV_C_LISTS_FOUND = DEV_C_OWN, /* with the list cache: lists found, */
    DEV_C_LISTS_LOADED,            /* lists loaded, */
    DEV_C_BYTES_LOADED,            /* bytes loaded */
    DEV_C_CACHE_END
};

/* A batch of a search in flight (search_batches): its plan, what its stages read, and from its
 * enqueue to its completion the read of its results and what reading them needs. */
typedef struct dev_flight {
    batch_plan plan;
    plan_layout lay;           /* where its records lie in the upload */
    algo_batch b;              /* the batch as the algorithm's stage sees it */
    dev_pinned up;             /* its upload (plan_pack) */
    dev_pinned res;            /* its results, read back */
    size_t read_len;           /* words of results read (ABI_OUT_WORDS, then the algorithm's) */
    cl_event first, read;      /* its first command, and the read of its results: complete when the
                                * whole batch is; their profiling times span the batch on the device */
    unsigned nevents;          /* its profiled commands, in the queue's events after those of the batch before */
    int last;                  /* the search's last batch: its read blocks */
    int fail;                  /* tests (clx_fail_batch): it fails when waited for */
} dev_flight;

/* A query's cost (plan_cost) and its index, for ordering a search. */
typedef struct dev_qcost {
    uint64_t cost;
    uint32_t q;
} dev_qcost;

/* The search in progress (clx_search_prepare .. clx_search_finish): its algorithm and limits. */
typedef struct dev_search {
    const query_algo *algo;
    void *state;               /* the algorithm's */
    uint32_t kk;
    plan_limits lim;
    size_t algo_counters;      /* where the algorithm's counters start in the engine's */
    uint64_t hits0, misses0, loaded0; /* the list cache's counts when it began */
    /* the second ranking stage in its batches (dev_rerank.c): the hits it keeps a query, 0 for
     * none; the search's batch */
    uint32_t rerank_k;
    const cls_batch *rerank_batch;
} dev_search;

/* The programs' build notes kept for the description, and room for a whole description
 * (clx_create's desc): the notes, the device, kernels, parameters and their source, lists. */
#define CLX_NOTES_LEN 14400
#define EXEC_DESC_LEN (CLX_NOTES_LEN + 8192)

typedef struct clx_engine {
    const cls_index *idx;
    dev_ctx dc;                /* the device, its programs' kernels and the profile */
    cl_program prog, prog_dec; /* query kernels (every algorithm's file and topk.cl); the index's decoder */
    cl_program prog_check;     /* the decoder with -DDECODE_CHECK=1: check_blocks, run at the start */
    char dopts[320];           /* the decoder's build options */
    char notes[CLX_NOTES_LEN];         /* the programs' build notes, for the description */
    /* The index on the device: its postings words and block records whole, where they fit (see
     * clx_create), else arenas of the list cache, which the planner fills batch by batch. */
    cl_mem d_words, d_blocks, d_norms; /* and the documents' BM25 norms */
    int cached;                        /* 1: d_words and d_blocks are the list cache's arenas */
    list_cache cache;
    uint64_t dev_mem;                  /* the device memory the engine may take, in bytes */
    dbuf stage;                        /* the list cache's staging buffer on the device */
    dev_pinned stage_host;             /* its host side: data | abi_place records */
    size_t stage_words;                /* words one staging load may take */
    abi_place *h_places;
    size_t h_places_cap;
    float norm_k1, norm_b;             /* the parameters d_norms holds (-1: none yet) */
    float *h_norms;
    /* the stages' buffers, sized from the data, reused: the upload, the whole lists' decode tasks,
     * their docIDs and frequencies, the results */
    dbuf in, tasks, docs, freqs, out;
    topk_state topk;                   /* the top-k stage */
    void *algo_state[CLS_NUM_MODES];   /* each algorithm's own (query_algo.create) */
    uint32_t *h_out;  /* results read back outside a search's batches (the tests' hooks) */
    size_t h_out_cap; /* words */
    /* A search's batches (search_batches): the next one is planned and enqueued while the one
     * before runs on the device; plan is the last one enqueued (tests read it) */
    dev_flight flight[2];
    const batch_plan *plan;
    dev_search search;
    uint32_t fail_in;  /* tests (clx_fail_batch): batches to enqueue until one fails; 0: none */
    int fail_late;     /* it fails when waited for, not at its enqueue */
    uint64_t budget; /* bytes the per-batch buffers may take together */
    /* the cost model (clx_search): plan_cost units per second of a batch's wall time, measured
     * and smoothed (0 until a batch ran); the target time of a batch */
    double rate, batch_secs;
    uint32_t batch_floor; /* queries a batch takes before the target time can close it */
    uint32_t *order; /* the search's queries, cheapest first (balanced batches) */
    dev_qcost *cost;
    uint32_t *again; /* the queries an algorithm asked to run again */
    size_t order_cap, cost_cap, again_cap;
    double check_secs;      /* check_index's wall time at start-up */
    uint32_t batches;       /* batches of the last search */
    cls_counter *counters;  /* of the last search: the executor's, then its algorithm's */
    size_t ncounters, counters_cap;
    struct dev_rerank *rerank; /* the second ranking stage on this device (dev_rerank.c), or NULL */
    uint64_t rerank_chunk;     /* rows a chunk of it makes at most (0: RERANK_CHUNK_ROWS) */
    int rerank_off;            /* the device could not hold what the stage reads: the host runs it */
} clx_engine;

/* The second ranking stage (rerank.h) as a stage of the batches of a search the executor runs
 * whole (dev_rerank.c). dev_rerank_begin, after clx_search_prepare: *on 1 where p asks for a
 * stage and the device runs it in its batches (the programs and the documents' data made at the
 * first such search), else 0 and the scheduler's stage runs on the host; then, per batch, the
 * stage table's row (size, enqueue: its kernels after top-k) and the read of its results
 * (dev_rerank_words of dev_rerank_results, in place of the candidates) and their collection;
 * after the batches dev_rerank_pack leaves r as rerank_run would (r->reranked: final). */
typedef struct dev_rerank dev_rerank;
cls_status dev_rerank_begin(clx_engine *e, const cls_batch *b, const cls_search_params *p, int *on);
cls_status dev_rerank_prepare_results(const clx_engine *e, cls_results *r);
cls_status dev_rerank_size(clx_engine *e, dev_flight *f);
cls_status dev_rerank_enqueue(clx_engine *e, dev_flight *f);
size_t dev_rerank_words(const clx_engine *e, const dev_flight *f);
cl_mem dev_rerank_results(const clx_engine *e);
cls_status dev_rerank_collect(clx_engine *e, dev_flight *f, const uint32_t *words, cls_results *r);
void dev_rerank_pack(const clx_engine *e, cls_results *r);
/* Where the stage runs on an engine of this device (cdiv: whether it rounds division correctly),
 * and why not in the batches where it does not: the engine's -v line. */
const char *dev_rerank_explain(const clx_engine *e, int cdiv);
void dev_rerank_free(dev_rerank *rr);
/* Tests: rows (candidate slots) the stage makes at most a chunk of a batch (0: the default), so
 * that small batches take several. */
void clx_set_rerank_chunk(clx_engine *e, uint64_t rows);

#endif
