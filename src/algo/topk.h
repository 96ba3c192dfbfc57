/* The top-k stage (cl/topk.cl, cl/topk_wide.cl): the k best of each group of keys, in the order
 * of cl/abi.h's results (score descending, then docID ascending; keys may carry a tier in their
 * top bits). Every batch ends with it, and an algorithm may run it in two levels (AND: per work
 * unit, then per query). Its kernel is chosen by the shape of what it ranks:
 *   topk_select  segments of candidates (one work-group a group), or what the others cannot take
 *   topk_rows    many dense rows, each read once, with a buffer of candidates in local memory
 *   topk_team    short dense rows at small k, a team of work-items a row
 *   topk_wide    few long dense rows, many work-groups a row (cl/topk_wide.cl)
 * It owns its scratch and the survivors' buffers of topk_wide, and counts its launches. */
#ifndef CLS_ALGO_TOPK_H
#define CLS_ALGO_TOPK_H

#include <stdint.h>

#include "device/dev.h"

/* What one top-k ranks: `groups` groups of keys, each either a dense row of num_docs keys (the
 * key's position is its docID) or a segment (start, count) of seg, keys at its positions +
 * key_shift in scores and their docIDs in cand_docs. */
typedef struct topk_input {
    cl_mem scores;
    cl_mem cand_docs; /* segments: their docIDs (ignored for dense rows) */
    cl_mem seg;       /* segments: (start, count) a group (ignored for dense rows) */
    cl_uint key_shift;
    cl_uint dense;
    uint32_t num_docs;
    uint32_t kk, P;   /* hits kept a group; scratch a group (plan_scratch) */
} topk_input;

/* Points in at segments: keys at seg's positions (+ key_shift) in keys, docIDs in docs. */
static inline void topk_segments(topk_input *in, cl_mem keys, cl_mem docs, cl_mem seg, cl_uint key_shift)
{
    in->scores = keys;
    in->cand_docs = docs;
    in->seg = seg;
    in->key_shift = key_shift;
    in->dense = 0;
}

/* Points in at dense rows of scores (docs: any buffer, unread). */
static inline void topk_rows_of(topk_input *in, cl_mem scores, cl_mem docs)
{
    in->scores = scores;
    in->cand_docs = docs;
    in->seg = NULL;
    in->key_shift = 0;
    in->dense = 1;
}

/* The kernels, in the order of their launch counts (topk_state.launches). */
enum { TOPK_SELECT, TOPK_ROWS, TOPK_TEAM, TOPK_WIDE, TOPK_KINDS };
extern const char *const topk_kind_names[TOPK_KINDS];

/* Forcing a kernel for dense rows (tests): 0 the stage's choice. */
enum { TOPK_FORCE_NONE, TOPK_FORCE_SELECT, TOPK_FORCE_ROWS_LEAST, TOPK_FORCE_ROWS, TOPK_FORCE_WIDE_SELECT };

typedef struct topk_state {
    dev_ctx *dc;
    cl_program prog;        /* the query program, which holds the top-k kernels */
    dbuf sdoc, sscore;      /* topk_select's scratch: P a group */
    dbuf wcand, wscore, wseg, wstate; /* topk_wide's survivors, their segments, the rows' select state */
    int force;              /* TOPK_FORCE_* */
    const char *ran;        /* the kernel that last ranked dense rows (tests and benchmarks) */
    uint64_t launches[TOPK_KINDS];
} topk_state;

/* The k best of each of groups groups of in into out (cl/abi.h's layout for `groups` groups). */
cls_status topk_run(topk_state *t, const topk_input *in, cl_uint groups, cl_mem out, const char *step);
/* The candidate entries a work-group of topk_rows gets for rows of num_docs keys at kk (as
 * t->force says); 0: local memory cannot hold what it needs, topk_select ranks them. */
cl_uint topk_rows_cap(const topk_state *t, uint32_t num_docs, uint32_t kk);
/* Whether dense rows of num_docs keys at kk go to topk_team unless t->force says otherwise. */
int topk_team_fits(const topk_state *t, uint32_t num_docs, uint32_t kk);
void topk_free(topk_state *t);

#endif
