/* Engines behind cls_engine: the plain-C reference and the OpenCL engine share this face. */
#ifndef CLS_ENGINE_H
#define CLS_ENGINE_H

#include "query/batch.h"
#include "index/index.h"

typedef struct ref_engine ref_engine;
cls_status ref_create(const cls_index *idx, ref_engine **out);
void ref_free(ref_engine *e);
cls_status ref_search(ref_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);

typedef struct clx_engine clx_engine;
struct clx_params;
/* spec: "auto", "gpu", "cpu" or "P:D". prm: the kernel parameters to build with (checked against
 * the device), or NULL for those in force (clx_params_for). desc receives the verbose
 * description. */
cls_status clx_create(const cls_index *idx, const char *spec, const struct clx_params *prm, clx_engine **out,
                      char *desc, size_t desc_len);
void clx_free(clx_engine *e);
cls_status clx_search(clx_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r);
void clx_build_times(const clx_engine *e, double *seconds, int *from_cache);
void clx_profile(const clx_engine *e, cls_profile *p);

/* cls_engine_create with explicit kernel parameters for an OpenCL device (NULL: those in force):
 * how the benchmarks and clsearch tune build a variant without touching the environment. */
cls_status engine_create_with(const cls_index *idx, const char *device, const struct clx_params *prm, cls_engine **out);

/* Checks k, k1, b; shared by every engine so they reject the same things. */
cls_status params_check(const cls_search_params *p);

#endif

/* ---- Test hooks: run one kernel family alone on caller-made inputs (tests/test_kernels.c). */

/* Decodes n blocks described by blocks[] over words[] with decode_blocks; block i's postings
 * land at docs/freqs + i * (the engine index's block size); the program is built for that
 * index's codec, block size and pfor depth. */
cls_status clx_test_decode(clx_engine *e, const uint32_t *words, uint64_t nwords, const idx_block *blocks,
                           uint32_t n, uint32_t *docs, uint32_t *freqs);
/* Runs topk_select in dense mode over nq rows of N scores (0 = no match); writes per-query
 * counts and the k best (docID, score) pairs at q * k. */
cls_status clx_test_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k,
                         uint32_t *counts, uint32_t *docs, float *out_scores);
/* (bench) Uploads the index again, timed (*upload_s: words and block metadata, from
 * profiling events), then decodes nb blocks reps times after one warm-up run: blocks
 * sel[0..nb) (scattered, as a query that decodes only the blocks it needs), or [b0, b0 + nb)
 * when sel is NULL; kernel_s[r] receives each run's kernel time. The i-th lands at
 * i * block_size. */
cls_status clx_bench_decode(clx_engine *e, const uint32_t *sel, uint64_t b0, uint32_t nb, unsigned reps,
                            double *kernel_s, double *upload_s);
/* (bench) Reads back what the last clx_bench_decode left (nb * block_size values each). */
cls_status clx_bench_decoded(clx_engine *e, uint32_t nb, uint32_t *docs, uint32_t *freqs);
/* (bench) topk_select alone in dense mode over nq rows of N scores: one timed upload
 * (*upload_s), then reps timed runs after a warm-up (kernel_s[r]); row 0's hits come back
 * (*count0 of them, k slots) for a check. */
cls_status clx_bench_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, unsigned reps,
                          double *kernel_s, double *upload_s, uint32_t *docs0, float *scores0, uint32_t *count0);
/* (bench) The kernel parameters the engine's programs were built with. */
const struct clx_params *clx_engine_params(const clx_engine *e);
/* The OpenCL engine behind e, or NULL for the reference engine. */
clx_engine *engine_clx(cls_engine *e);
