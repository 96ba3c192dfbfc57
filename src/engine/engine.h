/* Executors behind cls_engine. engine.c turns a device spec into an executor and forwards every
 * call through its ops table; the two executors are the plain-C reference (ref_engine.c) and the
 * OpenCL device (dev_engine.c). Both run the query algorithms of src/algo/algos.c. */
#ifndef CLS_ENGINE_ENGINE_H
#define CLS_ENGINE_ENGINE_H

#include "index/index.h"
#include "query/batch.h"

/* What an executor does; impl is its own state. An executor runs one search at a time; the
 * scheduler (scheduler.c) gives it work. prepare, order, run, finish and k are NULL where it runs
 * only whole searches (the reference engine); the device executor runs ranges of a search too
 * (clx_search_prepare and the rest, below). */
typedef struct executor_ops {
    cls_status (*search)(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r);
    cls_status (*prepare)(void *impl, const cls_search_params *p, uint64_t nq);
    cls_status (*order)(void *impl, const cls_batch *b, const uint32_t **order);
    cls_status (*run)(void *impl, const cls_batch *b, const uint32_t *order, uint64_t n, cls_results *r);
    void (*finish)(void *impl);
    uint32_t (*k)(const void *impl);
    void (*free)(void *impl);
    /* NULL where the engine has no programs or no profile */
    void (*build_times)(const void *impl, double *seconds, int *from_cache);
    size_t (*profile)(const void *impl, const cls_profile_step **steps, uint32_t *batches);
    size_t (*counters)(const void *impl, const cls_counter **counters);
    /* the queries it runs at once (the host: its threads), so that its cost model weighs a run
     * of n queries as n / min(n, width) of one's; NULL: 1 (a device's batch is one run) */
    unsigned (*width)(const void *impl);
} executor_ops;

/* The reference engine: plain C, one query at a time. */
typedef struct ref_engine ref_engine;
cls_status ref_create(const cls_index *idx, ref_engine **out);
void ref_free(ref_engine *e);
cls_status ref_search(ref_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);

/* The host executor (host_engine.c): the CPU's cores, threads of them (1..1024; 0 at creation:
 * host_threads_default, every online core), one query per thread at a time. nice > 0: its helper
 * threads (all but the caller's) run that much nicer than the process, so that beside devices
 * the threads that feed them (planning, launches, waits) and a server's are never queued behind
 * its own; host_nice says so, and why not where the system refused (*err: errno, 0 none). */
typedef struct host_engine host_engine;
cls_status host_create(const cls_index *idx, unsigned threads, int nice, host_engine **out);
int host_nice(const host_engine *e, int *err);
void host_free(host_engine *e);
cls_status host_search(host_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);
/* host_search in parts, as clx_search's (below) for a scheduler's split: prepare, order (by the
 * postings of each query's lists, most first), run a range (hits at r->docs + q * k), finish. */
cls_status host_search_prepare(host_engine *e, const cls_search_params *p, uint64_t nq);
cls_status host_search_order(host_engine *e, const cls_batch *b, const uint32_t **order);
cls_status host_search_run(host_engine *e, const cls_batch *b, const uint32_t *order, uint64_t n, cls_results *r);
void host_search_finish(host_engine *e);
uint32_t host_search_k(const host_engine *e);
size_t host_counters(const host_engine *e, const cls_counter **counters);
unsigned host_threads(const host_engine *e);
unsigned host_threads_default(void);

/* The OpenCL engine. spec: "auto", "gpu", "cpu" or "P:D". prm: the kernel parameters to build
 * with (checked against the device), or NULL for those in force (clx_params_for). o: the
 * engine's options (device_mem: dev_engine.c's place_index says how the bytes are shared;
 * batch_ms: the cost model's target, clx_search). desc receives the verbose description. */
typedef struct clx_engine clx_engine;
struct clx_params;
cls_status clx_create(const cls_index *idx, const char *spec, const struct clx_params *prm, const cls_engine_opts *o,
                      clx_engine **out, char *desc, size_t desc_len);
void clx_free(clx_engine *e);
cls_status clx_search(clx_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);
/* clx_search in its parts, for a scheduler that hands ranges of a search's queries to several
 * executors: prepare a search of nq queries (counters, norms, the algorithm's rules and limits);
 * order a cls_batch by cost (*order: a permutation of its queries, cheapest first); run the
 * queries order[0..n) (and the re-runs the algorithm asks for), each query's hits at r->docs +
 * q * k with their count in r->start[q + 1] (r reset for every query of the batch, results_reset;
 * executors may run disjoint ranges into one r at once); finish (the counters); then
 * results_pack(r, clx_search_k(e)). */
cls_status clx_search_prepare(clx_engine *e, const cls_search_params *p, uint64_t nq);
cls_status clx_search_order(clx_engine *e, const cls_batch *b, const uint32_t **order);
cls_status clx_search_run(clx_engine *e, const cls_batch *b, const uint32_t *order, uint64_t n, cls_results *r);
void clx_search_finish(clx_engine *e);
/* The hits kept per query of the search prepared (k, at most the documents). */
uint32_t clx_search_k(const clx_engine *e);
void clx_build_times(const clx_engine *e, double *seconds, int *from_cache);
size_t clx_profile(const clx_engine *e, const cls_profile_step **steps, uint32_t *batches);
size_t clx_counters(const clx_engine *e, const cls_counter **counters);
/* The bytes a device batch's buffers may take together (tests force small batches with it). */
void clx_set_budget(clx_engine *e, uint64_t bytes);
/* The queries a batch takes before the cost model's target time can close it (tests force 1). */
void clx_set_batch_floor(clx_engine *e, uint32_t queries);
/* An algorithm's own state on the engine (src/algo/<name>.h says what tests may steer), or NULL. */
void *clx_algo_state(clx_engine *e, cls_mode mode);
/* The nth batch enqueued from now (1 the next; 0: none) fails for want of device memory, at its
 * enqueue (late 0) or when it is waited for, with the batch after it already enqueued (late 1):
 * tests walk search_batches' recovery, which runs such a batch again in halves. */
void clx_fail_batch(clx_engine *e, uint32_t nth, int late);
/* The kernel parameters the engine's programs were built with. */
const struct clx_params *clx_engine_params(const clx_engine *e);

/* The scheduler (scheduler.c): a cls_engine's searches over its n executors (executor i of kind
 * ops[i]: devices and the host may mix), run whole or split, synchronous or not, a failing
 * executor set aside. serial[i]: executor i runs only while no other serial one does (a device
 * that takes no launches from several threads).
 * shard_base (NULL: each executor holds the whole of idx): executor i holds the documents of idx
 * from shard_base[i] on, numbered from 0, and every search runs on each, merged (merge.c). The
 * scheduler owns the executors from creation (sched_free frees them), except when creation fails. */
typedef struct sched sched;
cls_status sched_create(const cls_index *idx, const executor_ops *const *ops, void *const *impls, const int *serial,
                        unsigned n, const uint32_t *shard_base, sched **out);
void sched_free(sched *s);
/* A search queued; async: it may run on the executors' threads (else the caller's sched_wait
 * runs it when an executor is free). */
cls_status sched_submit(sched *s, const cls_batch *b, const cls_search_params *p, cls_results *r, int async,
                        cls_search **out);
int sched_done(const cls_search *j);
/* Waits for j; its status, the index checked intact (cls_index_intact) when it succeeded. */
cls_status sched_wait(cls_search *j);
/* Waits for j, then returns it to the scheduler's pool. */
void sched_release(cls_search *j);
size_t sched_job_counters(const cls_search *j, const cls_counter **c);
size_t sched_job_profile(const cls_search *j, const cls_profile_step **steps, uint32_t *batches);
/* The last finished search's. */
size_t sched_counters(const sched *s, const cls_counter **c);
size_t sched_profile(const sched *s, const cls_profile_step **steps, uint32_t *batches);
void sched_build_times(const sched *s, double *seconds, int *from_cache);
unsigned sched_executors(const sched *s);
void *sched_executor(sched *s, unsigned i);
void sched_executor_state(sched *s, unsigned i, cls_executor_info *info);
/* Executor i's name in cls_executor_info (its device spec: "host:15", "1:0", "ref"). */
void sched_set_name(sched *s, unsigned i, const char *name);
/* Executors idle and in service, 0 while searches wait in the queue (cls_engine_idle). */
unsigned sched_idle(sched *s);
/* The second ranking stage the engine's searches end in when they ask for one (rerank.h; kept,
 * freed by the engine after the scheduler). */
struct rerank_stage;
void sched_set_stage(sched *s, struct rerank_stage *stage);
/* Tests: executor i held busy, as if running a part its model gives `seconds` more (it takes no
 * work meanwhile); seconds 0 releases it. Call only while it is idle (or held). */
void sched_hold(sched *s, unsigned i, double seconds);
/* Tests: where search j waits in the queue (0 first), or -1 when it does not. */
int sched_queued_position(sched *s, const cls_search *j);
/* The fewest queries a part of a split search holds (tests force 1; 0 never splits). */
void sched_set_split_min(sched *s, unsigned queries);
/* (tests) always 1: every search split over the free executors, whatever the models predict
 * (split_pays), so that split searches' results are checked. */
void sched_set_split_always(sched *s, int always);
/* Executor i's time model for routing and splits fixed at the line t = fixed + postings / rate, in
 * place of its measured cost models (tests route without timing anything; rate 0: its own
 * again). */
void sched_set_model(sched *s, unsigned i, double rate, double fixed);

/* cls_engine_create with explicit kernel parameters for an OpenCL device (NULL: those in force):
 * how the benchmarks and clsearch tune build a variant without touching the environment. */
cls_status engine_create_with(const cls_index *idx, const char *device, const struct clx_params *prm,
                              cls_engine **out);
/* The same with every option (o NULL: the defaults). */
cls_status engine_create_full(const cls_index *idx, const cls_engine_opts *o, const struct clx_params *prm,
                              cls_engine **out);
/* The OpenCL engine behind e (a device set's first executor: kernel suites and test hooks then run
 * on one device of `-d gpu` on a host of several GPUs), or NULL for the reference engine. */
clx_engine *engine_clx(cls_engine *e);
/* e's executors: their number, the ith when it is an OpenCL one (else NULL), its scheduler. */
unsigned engine_executors(const cls_engine *e);
clx_engine *engine_executor(cls_engine *e, unsigned i);
sched *engine_sched(cls_engine *e);

/* Checks k, mode, k1, b; shared by every engine so they reject the same things. */
cls_status params_check(const cls_search_params *p);

#endif
