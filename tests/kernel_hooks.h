/* Hooks of the tests: one kernel family of an OpenCL engine alone, on inputs the test makes. */
#ifndef CLS_TESTS_KERNEL_HOOKS_H
#define CLS_TESTS_KERNEL_HOOKS_H

#include <stdint.h>

#include "index/index.h"
#include "engine/engine.h"

/* Decodes n blocks described by blocks[] over words[] with decode_blocks; block i's postings
 * land at docs/freqs + i * (the engine index's block size); the program is built for that
 * index's codec, block size and pfor depth. */
cls_status clx_test_decode(clx_engine *e, const uint32_t *words, uint64_t nwords, const idx_block *blocks, uint32_t n,
                           uint32_t *docs, uint32_t *freqs);
/* Ranks nq dense rows of N scores (0 = no match) as the engine does (topk_run: topk_rows,
 * topk_team, topk_wide.cl's kernels or topk_select); writes per-query counts and the k best (docID, score)
 * pairs at q * k. */
cls_status clx_test_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, uint32_t *counts,
                         uint32_t *docs, float *out_scores);
/* How dense rows' top-k runs from now on (TEST_TOPK_*: the engine's choice, topk_select, topk_rows
 * with its least buffer, so that it cuts its buffer at nearly every step, topk_rows with its usual
 * buffer where topk_team would run, topk_wide's survivors ranked by topk_select, not by counting); the kernel that ranked dense rows last ("topk_rows",
 * "topk_team", "topk_select", "topk_wide" or NULL); the buffer topk_rows would get for rows of N at
 * k (0: it cannot run there); whether the engine's choice for them is topk_team (where the
 * many-group top-k does not take them); the device's compute units. */
enum { TEST_TOPK_ENGINE, TEST_TOPK_SELECT, TEST_TOPK_ROWS_LEAST, TEST_TOPK_ROWS, TEST_TOPK_WIDE_SELECT };
void clx_test_topk_force(clx_engine *e, int force);
const char *clx_test_topk_ran(const clx_engine *e);
uint32_t clx_test_topk_rows_cap(const clx_engine *e, uint32_t N, uint32_t k);
int clx_test_topk_team_fits(const clx_engine *e, uint32_t N, uint32_t k);
uint32_t clx_test_compute_units(const clx_engine *e);
/* Runs topk_select over segments: query q ranks entries seg[2q] .. seg[2q] + seg[2q + 1] - 1 of
 * keys (float bits, 0 = no match) and docs (n entries in all, in any order); outputs as above. */
cls_status clx_test_topk_seg(clx_engine *e, const uint32_t *keys, const uint32_t *docs, uint64_t n, const uint32_t *seg,
                             uint32_t nq, uint32_t k, uint32_t *counts, uint32_t *out_docs, float *out_scores);

#endif
