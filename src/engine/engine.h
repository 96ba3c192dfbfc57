/* Executors behind cls_engine. engine.c turns a device spec into an executor and forwards every
 * call through its ops table; the two executors are the plain-C reference (ref_engine.c) and the
 * OpenCL device (dev_engine.c). Both run the query algorithms of src/algo/algos.c. */
#ifndef CLS_ENGINE_ENGINE_H
#define CLS_ENGINE_ENGINE_H

#include "index/index.h"
#include "query/batch.h"

/* What an engine does; impl is its own state. */
typedef struct engine_ops {
    cls_status (*search)(void *impl, const cls_batch *b, const cls_search_params *p, cls_results *r);
    void (*free)(void *impl);
    /* NULL where the engine has no programs or no profile */
    void (*build_times)(const void *impl, double *seconds, int *from_cache);
    size_t (*profile)(const void *impl, const cls_profile_step **steps, uint32_t *batches);
    size_t (*counters)(const void *impl, const cls_counter **counters);
} engine_ops;

/* The reference engine: plain C, one query at a time. */
typedef struct ref_engine ref_engine;
cls_status ref_create(const cls_index *idx, ref_engine **out);
void ref_free(ref_engine *e);
cls_status ref_search(ref_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);

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

/* The device set (multi_engine.c): n device executors (specs as clx_create takes them), one
 * search split among them. */
typedef struct multi_engine multi_engine;
cls_status multi_create(const cls_index *idx, const char *const *specs, unsigned n, const struct clx_params *prm,
                        const cls_engine_opts *o, multi_engine **out, char *desc, size_t desc_len);
void multi_free(multi_engine *m);
cls_status multi_search(multi_engine *m, const cls_batch *b, const cls_search_params *p, cls_results *r);
size_t multi_counters(const multi_engine *m, const cls_counter **counters);
size_t multi_profile(const multi_engine *m, const cls_profile_step **steps, uint32_t *batches);
void multi_build_times(const multi_engine *m, double *seconds, int *from_cache);
/* Its executors (tests). */
unsigned multi_executors(const multi_engine *m);
clx_engine *multi_executor(multi_engine *m, unsigned i);

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
/* The device set behind e, or NULL. */
multi_engine *engine_multi(cls_engine *e);

/* Checks k, mode, k1, b; shared by every engine so they reject the same things. */
cls_status params_check(const cls_search_params *p);

#endif
