/* Hooks of the benchmarks: one kernel family of an OpenCL engine alone, timed by profiling
 * events (bench_hooks.c). */
#ifndef CLS_BENCH_HOOKS_H
#define CLS_BENCH_HOOKS_H

#include <stdint.h>

#include "engine/engine.h"

/* Uploads the index again, timed (*upload_s: words and block records, from profiling events),
 * then decodes nb blocks reps times after one warm-up run: blocks sel[0..nb) (scattered, as a
 * query that decodes only the blocks it needs), or [b0, b0 + nb) when sel is NULL; kernel_s[r]
 * receives each run's kernel time. The i-th lands at i * block_size. */
cls_status clx_bench_decode(clx_engine *e, const uint32_t *sel, uint64_t b0, uint32_t nb, unsigned reps,
                            double *kernel_s, double *upload_s);
/* Reads back what the last clx_bench_decode left (nb * block_size values each). */
cls_status clx_bench_decoded(clx_engine *e, uint32_t nb, uint32_t *docs, uint32_t *freqs);
/* The engine's top-k of nq dense rows of N scores alone: one timed upload (*upload_s), then reps
 * timed runs after a warm-up (kernel_s[r]); every row's hits come back for a check (counts[q],
 * k slots of docs and scores a row, as clx_search reads them), and the kernel that ranked the
 * rows (*kernel: topk_team, topk_rows, topk_wide or topk_select). */
cls_status clx_bench_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, unsigned reps,
                          double *kernel_s, double *upload_s, uint32_t *counts, uint32_t *docs, float *out_scores,
                          const char **kernel);

#endif
