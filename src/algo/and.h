/* What AND (and.c) lends the algorithms built on its intersection (and-or). */
#ifndef CLS_ALGO_AND_H
#define CLS_ALGO_AND_H

#include "algo/algo.h"

/* The buffers of an intersection: the skipped lists' chosen blocks and their counts, each work
 * unit's candidates (docIDs, scores) and their count, the top-k segments of units and queries,
 * and the first level of a two-level top-k. Each algorithm that intersects owns one. */
typedef struct and_bufs {
    uint32_t chunk; /* candidates (driving-list postings) per work unit */
    dbuf stasks, nsel, cand, cscore, ucount, useg, qseg, l1;
} and_bufs;

/* A work unit (abi_unit) is this many steps of an intersect work-group over the driving list: long
 * enough that a unit's fixed costs (its descriptors, the driving term's choice) stay small, short
 * enough that a long query spreads over every compute unit. */
#define AND_CHUNK_STEPS 32u

/* x's unit size for env's device (UINT32_MAX, one unit a query, where there is none). */
void and_bufs_init(and_bufs *x, const algo_env *env);
/* The work units of a query of cand candidates (at least one). */
uint32_t and_units_for(const and_bufs *x, uint32_t cand);
/* Test knob: candidates per work unit, so a long query's intersection spreads over many
 * work-groups (state: AND's or and-or's). */
void and_set_chunk(void *state, uint32_t candidates);

/* Grows x for batch b. */
cls_status and_bufs_size(and_bufs *x, const algo_batch *b);
void and_bufs_free(and_bufs *x);
/* plan_units: the batch's work units' shares of their driving lists, planned on the device. */
cls_status and_units(and_bufs *x, algo_batch *b);
/* plan_units, then intersect_and: each work unit's documents holding every term of its query,
 * in docID order, at cand_offset + begin of x->cand; their count in x->ucount. */
cls_status and_intersect(and_bufs *x, algo_batch *b);

#endif
