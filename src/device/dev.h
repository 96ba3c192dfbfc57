/* The OpenCL engine's insides, for the files that work with them: the engine itself
 * (dev_engine.c: create, the search loop), kernel launching and profiling (dev_launch.c), the
 * query algorithms' launch functions (src/query/<name>.c), and the hooks that run one kernel
 * family alone for the tests (tests/kernel_hooks.c) and the benchmarks (bench/bench_hooks.c). */
#ifndef CLS_DEVICE_DEV_H
#define CLS_DEVICE_DEV_H

#include "device/clx.h"
#include "index/index.h"
#include "query/algo.h"
#include "query/plan.h"

#define DEV_MIN_BUF 64u
/* Queries per device batch: at least DEV_FIRST_BATCH where the byte budget allows, at most
 * DEV_MAX_BATCH; in between, as many as the device gets through in the target time
 * (DEV_BATCH_SECONDS unless the engine was given another) at the rate the cost model measured.
 * The floor, because a batch's time is no guide below it: on the H100, gov2-scale AND batches
 * cut to 10 ms (about 400 queries) ran 17% slower than batches of 1,024, and at k 1,000, where
 * top-k dominates, batches cut to 25 ms ran at a third of the speed; cheap queries gain from
 * batches above it (1M-document AND: +16% at 4,096 queries a call). */
#define DEV_MAX_BATCH 4096u
#define DEV_FIRST_BATCH 1024u
#define DEV_BATCH_SECONDS 0.025
#define DEV_MAX_KERNELS 32u
#define DEV_MAX_STEPS 24u   /* named steps of a profile */
#define DEV_MAX_EVENTS 64u  /* commands profiled of the batches in flight (two, of at most 32) */
/* The counters of the last search (clx_counters, -v), by id; dev_engine.c's table names them.
 * The list cache's come last: an engine without the cache reports the ids before DEV_C_LISTS_FOUND. */
enum dev_counter {
    DEV_C_QUERIES,                 /* queries */
    DEV_C_BLOCKS_IN_LISTS,         /* blocks in their lists */
    DEV_C_BLOCKS_DECODED,          /* blocks decoded */
    DEV_C_COST_RATE,               /* the cost model's rate */
    DEV_C_QUERIES_PRUNED,          /* queries pruned by block maxima */
    DEV_C_POSTINGS_IN_LISTS,       /* postings in their lists */
    DEV_C_POSTINGS_DECODED,        /* postings decoded */
    DEV_C_PARTITIONS_SCORED,       /* OR partitions scored */
    DEV_C_QUERIES_RERUN,           /* OR queries run again with a larger pool */
    DEV_C_OR_BOUNDS_FROM,          /* where OR's block bounds came from (ABI_BOUND_*) */
    DEV_C_TOPK,                    /* launches of each top-k kernel, in dev_launch.c's topk_names order */
    DEV_C_TOPK_LAST = DEV_C_TOPK + 3,
    DEV_C_QUERIES_HASHED,          /* OR queries hashed */
    DEV_C_PARTITION_TERMS_SKIPPED, /* OR (partition, term) pairs not essential */
    DEV_C_BATCHES_CUT,             /* batches closed at each planner limit: + PLAN_CUT_* - PLAN_CUT_QUERIES */
    DEV_C_BATCHES_CUT_LAST = DEV_C_BATCHES_CUT + PLAN_CUT_ALLOC - PLAN_CUT_QUERIES,
    DEV_C_LISTS_FOUND,             /* with the list cache: lists found, */
    DEV_C_LISTS_LOADED,            /* lists loaded, */
    DEV_C_BYTES_LOADED,            /* bytes loaded */
    DEV_COUNTERS
};
/* A work unit (abi_unit) is this many steps of an intersect work-group over the driving list: long
 * enough that a unit's fixed costs (its descriptors, the driving term's choice) stay small, short
 * enough that a long query spreads over every compute unit. */
#define DEV_CHUNK_STEPS 32u

/* A device buffer that only grows (contents are not kept when it does). */
typedef struct dbuf {
    cl_mem mem;
    size_t cap; /* bytes */
} dbuf;

/* Host memory that the device reads or writes by DMA (a transfer from pageable memory is staged
 * by the driver, and may wait for the commands queued before it): a buffer of
 * CL_MEM_ALLOC_HOST_PTR, mapped once, its mapping kept while the buffer lives. */
typedef struct dev_pinned {
    cl_mem mem;
    void *host;
    size_t cap; /* bytes */
} dev_pinned;

/* A batch of a search in flight (dev_engine.c: search_batches): its plan, and from its enqueue
 * to its completion the read of its results and what reading them needs. */
typedef struct dev_flight {
    batch_plan plan;
    dev_pinned up;             /* its upload (plan_pack) */
    dev_pinned res;            /* its results, read back */
    size_t read_len;           /* words of results read (ABI_OUT_WORDS, and what follows) */
    cl_event first, read;      /* its first command, and the read of its results: complete when the
                                * whole batch is; their profiling times span the batch on the device */
    unsigned nevents;          /* its profiled commands, in e->events after those of the batch before */
    int fail;                  /* tests (clx_fail_batch): it fails when waited for */
} dev_flight;

/* A command of a batch in flight and the profile step it counts toward. */
typedef struct dev_event {
    cl_event ev;
    unsigned step;
    uint64_t bytes;
} dev_event;

/* A query's cost (dev_engine.c: query_cost) and its index, for ordering a search. */
typedef struct dev_qcost {
    uint64_t cost;
    uint32_t q;
} dev_qcost;

typedef struct clx_engine {
    const cls_index *idx;
    clx_device dev;
    clx_params prm;
    cl_context ctx;
    cl_command_queue queue;
    cl_program prog, prog_dec; /* query kernels (every algorithm's file and topk.cl); the index's decoder */
    cl_program prog_check;     /* the decoder with -DDECODE_CHECK=1: check_blocks, run at the start */
    cl_program prog_algo;      /* kernels that decode blocks themselves (algo->decode_file), built when
                                * a search first needs them on the decoder's options (dopts) */
    char dopts[320];
    cl_kernel kernels[DEV_MAX_KERNELS];
    const char *kernel_names[DEV_MAX_KERNELS];
    cl_uint kernel_nargs[DEV_MAX_KERNELS]; /* the parameters each declares (dev_run_n checks) */
    unsigned nkernels;
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
    /* per-batch buffers, sized from the data, reused */
    dbuf in, tasks, docs, freqs, cand, cscore, acc, sdoc, sscore, out, stasks, nsel, ucount, useg, qseg, l1;
    /* OR by partitions (src/query/or.c): per query term its partitions' bounds, per query their
     * sums, the work queue, the seeds, the counters, the offers' histograms; the lists decoded
     * ahead: their blocks' tasks, contributions, offsets and per partition their first slots
     * (cl/or_parts.cl) */
    dbuf or_m, or_ub, or_items, or_seed, or_ctl, or_hist, or_tasks, or_c, or_o, or_s;
    dbuf or_htab;           /* OR by hashing: the hashed queries' tables (or_hash) */
    dbuf or_act;            /* per round of or_score's queue pass, the queries with entries in it (or_rest) */
    unsigned or_hash_wg;    /* or_hash's work-items a group (OR_HASH_WG) */
    cl_mem d_bmax;          /* block maxima at weight 1 (ABI_BOUND_TABLE), one float a block */
    float bmax_k1, bmax_b;  /* the parameters d_bmax holds (-1: none yet) */
    cl_uint or_bsrc;        /* the bounds the search in progress prunes with (ABI_BOUND_*) */
    uint32_t *retry;        /* OR queries whose candidate pool overflowed, to run again */
    size_t nretry, retry_cap;
    uint32_t retry_pool;    /* the most candidates one of them offered */
    uint32_t pool_hint;     /* OR: candidate slots a query's pool starts with (tests force small ones) */
    uint32_t bound_ways;    /* or_bounds' groups per term (0: or.c's choice; tests force some) */
    int or_force_parts;     /* OR by partitions whatever the collection's size (tests) */
    int topk_force;         /* dense rows' top-k (tests): 0 the engine's choice, DEV_TOPK_SELECT
                             * topk_select, DEV_TOPK_ROWS_LEAST topk_rows with its least buffer,
                             * DEV_TOPK_ROWS topk_rows rather than topk_team, DEV_TOPK_WIDE_SELECT
                             * topk_wide's survivors through topk_select */
    const char *topk_ran;   /* the kernel that last ranked dense rows (tests and benchmarks) */
    uint32_t *h_out;  /* results read back outside a search's batches (dev_topk_rows) */
    size_t h_out_cap; /* words */
    /* A search's batches (search_batches): the next one is planned and enqueued while the one
     * before runs on the device; plan is the last one enqueued (tests read it) */
    dev_flight flight[2];
    const batch_plan *plan;
    uint32_t fail_in;  /* tests (clx_fail_batch): batches to enqueue until one fails; 0: none */
    int fail_late;     /* it fails when waited for, not at its enqueue */
    uint64_t budget; /* bytes the per-batch buffers may take together */
    uint32_t chunk;  /* candidates per work unit (DEV_CHUNK_STEPS steps of an intersect work-group) */
    /* the cost model (clx_search): plan_cost units per second of a batch's wall time, measured
     * and smoothed (0 until a batch ran); the target time of a batch */
    double rate, batch_secs;
    uint32_t batch_floor; /* queries a batch takes before the target time can close it */
    uint32_t *order; /* the search's queries, cheapest first (balanced batches) */
    dev_qcost *cost;
    size_t order_cap, cost_cap;
    double build_secs;
    int from_cache;
    double check_secs;      /* check_index's wall time at start-up */
    /* profile of the last search: named steps, and the events of the batches in flight */
    cls_profile_step steps[DEV_MAX_STEPS];
    unsigned nsteps;
    uint32_t batches;
    cls_counter counters[DEV_COUNTERS]; /* by enum dev_counter */
    dev_event events[DEV_MAX_EVENTS];
    unsigned nevents;
} clx_engine;

/* One planned batch on its way through the kernels: what an algorithm's launch reads and sets. */
typedef struct dev_batch {
    clx_engine *e;
    const batch_plan *pl;          /* its plan */
    uint32_t nq, num_docs;
    cl_mem in;                     /* the upload: lists | queries | terms | skips | units | olists (cl/abi.h) */
    cl_uint queries_base, terms_base, skips_base; /* word offsets of the records in `in` */
    cl_uint nskips;                /* abi_skip records */
    cl_uint units_base, nunits;    /* the abi_unit records: word offset in `in`, number */
    cl_uint olists_base, nolists;  /* the abi_olist records (OR by partitions) */
    cl_uint otasks;                /* their blocks */
    cl_uint nstasks;               /* selected-task slots of their regions */
    cl_uint nsel_at;               /* word of e->out where select_blocks counts the blocks it chose */
    cl_uint kk, P;                 /* hits kept per query; top-k scratch per group */
    /* set by the algorithm's launch: what topk_select ranks (one group per query) */
    cl_mem scores;    /* dense rows (num_docs a query), or keys at seg's positions + key_shift */
    cl_mem cand_docs; /* with segments: their docIDs (ignored for dense rows) */
    cl_mem seg;       /* with segments: (start, count) per query */
    cl_uint key_shift;
    cl_uint dense;
} dev_batch;

/* ---- dev_launch.c ---------------------------------------------------------------------- */

/* Grows p to at least need bytes (what names it in errors); p must not be in use by a command.
 * Its contents are not kept. */
cls_status dev_pinned_need(clx_engine *e, dev_pinned *p, size_t need, const char *what);
void dev_pinned_release(clx_engine *e, dev_pinned *p);
/* Grows b to at least need bytes (what names it in errors). */
cls_status dev_buf_need(clx_engine *e, dbuf *b, size_t need, const char *what);
/* clCreateBuffer, failing as CLSEARCH_FAULT's device-alloc faults (util/fault.h) say. */
cl_mem dev_create_buffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err);
void dev_buf_release(dbuf *b);

/* One kernel argument. DEV_MEM(x) and DEV_U32(x) take lvalues (their address is kept). */
typedef struct dev_arg {
    size_t size;
    const void *ptr;
} dev_arg;
#define DEV_MEM(m) ((dev_arg){sizeof(cl_mem), &(m)})
#define DEV_U32(v) ((dev_arg){sizeof(cl_uint), &(v)})

/* Sets kernel's arguments and enqueues groups work-groups of wg items; the command's device
 * time counts toward the profile step called step. Errors name the kernel (and the argument);
 * nargs must be the number of parameters the kernel declares. groups 0: the arguments alone. */
cls_status dev_run_n(clx_engine *e, const char *kernel, const dev_arg *args, unsigned nargs, size_t groups, size_t wg,
                     const char *step);
/* The elements of an array of dev_arg. */
#define DEV_NARGS(args) ((unsigned)(sizeof(args) / sizeof((args)[0])))
/* dev_run_n over an array (not a pointer) of arguments, counted from the array itself, so the
 * count cannot disagree with what the array holds; dev_run_n checks it against the kernel's. */
#define dev_run(e, kernel, args, groups, wg, step)                                                                    \
    dev_run_n((e), (kernel), (args), DEV_NARGS(args), (groups), (wg), (step))
/* Creates the kernel called name from prog into the engine's table (name must be a static string). */
cls_status dev_add_kernel(clx_engine *e, cl_program prog, const char *name);
/* The kernel called name (created with the programs), or NULL. */
cl_kernel dev_kernel(const clx_engine *e, const char *name);
/* Counts a transfer's event toward step (the event is kept until the batch's profile is taken).
 * Past DEV_MAX_EVENTS or DEV_MAX_STEPS, an error naming the limit (the event released). */
cls_status dev_record(clx_engine *e, cl_event ev, const char *step, uint64_t bytes);
/* Counts a clEnqueueFillBuffer's event toward the kernel step it prepares: device work, not a
 * transfer (a fill moves nothing between host and device; counted as a transfer, `bench e2e`'s
 * H2D column held or_bounds' kernels). */
cls_status dev_record_fill(clx_engine *e, cl_event ev, const char *step);
/* Adds the batch's finished commands to the profile (when ok) and releases their events. */
void dev_profile_collect(clx_engine *e, int ok);
/* The same for the first n of them (a batch that completed while the next was enqueued). */
void dev_profile_collect_first(clx_engine *e, unsigned n, int ok);
void dev_profile_reset(clx_engine *e);

/* Points b's top-k at segments: keys at seg's positions (+ key_shift) in keys, docIDs in docs. */
static inline void dev_segments(dev_batch *b, cl_mem keys, cl_mem docs, cl_mem seg, cl_uint key_shift)
{
    b->scores = keys;
    b->cand_docs = docs;
    b->seg = seg;
    b->key_shift = key_shift;
    b->dense = 0;
}
/* The 32-bit words of a words buffer (at least 1, at most 2^32 - 1): the decoders clamp their reads to it. */
cls_status dev_words_count(cl_mem words, cl_uint *nwords);

/* decode_blocks over ntasks abi_task records at word task_base of tasks, from words/blocks. */
cls_status dev_decode(clx_engine *e, cl_mem words, cl_mem blocks, cl_mem tasks, cl_uint task_base, size_t ntasks,
                      const char *step);
/* The k best of each of groups groups at b's kk from scores/cand_docs/seg as b describes them
 * (dense: rows of b->num_docs) into out (cl/abi.h's layout for `groups` groups): topk_select;
 * dense rows through topk_wide.cl's kernels where they are few and long, topk_team where they are
 * short and k small, else through topk_rows where local memory holds its buffer. */
cls_status dev_topk(clx_engine *e, const dev_batch *b, cl_uint groups, cl_mem out, const char *step);
/* The candidate entries a work-group of topk_rows gets for rows of num_docs keys at kk (as
 * e->topk_force says); 0: local memory cannot hold what it needs, topk_select ranks them. */
cl_uint dev_topk_rows_cap(const clx_engine *e, uint32_t num_docs, uint32_t kk);
/* Whether dense rows of num_docs keys at kk go to topk_team (a team of work-items a row) unless
 * e->topk_force says otherwise. */
int dev_topk_team_fits(const clx_engine *e, uint32_t num_docs, uint32_t kk);

#define DEV_TOPK_SELECT 1
#define DEV_TOPK_ROWS_LEAST 2
#define DEV_TOPK_ROWS 3 /* topk_rows (its usual buffer) where topk_team would run */
#define DEV_TOPK_WIDE_SELECT 4 /* the many-group top-k's survivors ranked by topk_select */

/* ---- one kernel family alone, for the tests' and benchmarks' hooks --------------------------- */

/* Grows b and writes bytes of data into it, blocking. */
cls_status dev_upload(clx_engine *e, dbuf *b, const void *data, size_t bytes, const char *what);
/* Buffers for topk_select over nq dense rows of N scores at k (the rows go into e->acc, which the
 * caller fills); *b describes the batch for dev_topk. */
cls_status dev_topk_rows(clx_engine *e, uint32_t nq, uint32_t N, uint32_t k, dev_batch *b);

#endif
