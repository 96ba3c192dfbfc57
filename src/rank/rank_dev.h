/* The tree ensemble's scores on an OpenCL device (cl/trees.cl), through the device layer
 * (src/device/dev.h): the model's arrays uploaded once, in the layout the device's parameters
 * choose (TREES_LAYOUT: the node walk, or complete level-order trees where the model's depth
 * allows), then documents scored a batch of rows at a time. Its twin is rank_model_score_rows
 * (model.h), equal bit for bit whatever the layout. */
#ifndef CLS_RANK_DEV_H
#define CLS_RANK_DEV_H

#include <stddef.h>

#include "device/dev.h"
#include "rank/model.h"

typedef struct rank_dev {
    dev_ctx own;  /* rank_dev_open's device (unused when it borrows one) */
    dev_ctx *dc;  /* the device it runs on: &own, or an engine's (rank_dev_open_on) */
    cl_program prog;
    dbuf nodes, roots, rows, out;
    dbuf level_trees;    /* the complete level-order trees (when level) */
    int level;           /* 1: the model runs as level-order trees (trees_level*), 0: the node walk */
    uint32_t depth;      /* level: the depth every tree is padded to */
    uint32_t tree_words; /* level: words a tree */
    uint32_t num_trees;
    float base;
    unsigned wg;   /* WG_TREES */
    unsigned docs; /* TREES_DOCS */
    char note[4400];
} rank_dev;

/* Opens the device spec names ("cpu", "gpu", "P:D", as clx_select takes it), builds trees.cl
 * and uploads m's trees. On failure everything is released. */
cls_status rank_dev_open(rank_dev *rd, const char *spec, const rank_model *m);
/* The same on a device an engine holds (its context and queue, its profile: the launches count as
 * "trees"), m NULL: no model yet (rank_dev_load). dc stays the caller's and must outlive rd. */
cls_status rank_dev_open_on(rank_dev *rd, dev_ctx *dc, const rank_model *m);
/* m's trees uploaded in place of those rd holds. */
cls_status rank_dev_load(rank_dev *rd, const rank_model *m);
/* The scores of n documents (rows of stride floats, stride >= m's num_features) into out. */
cls_status rank_dev_score(rank_dev *rd, const float *rows, size_t stride, size_t n, float *out);
/* The three steps of rank_dev_score apart, for a caller that keeps rows on the device or times
 * the kernel alone (bench/bench_trees.c): the rows uploaded into the device's buffer; the
 * kernel enqueued over the n rows last uploaded (the launch's device time counts toward the
 * profile step "trees"; nothing is waited for); the n scores read back, blocking. */
cls_status rank_dev_put_rows(rank_dev *rd, const float *rows, size_t stride, size_t n);
cls_status rank_dev_launch(rank_dev *rd, size_t stride, size_t n);
cls_status rank_dev_get_scores(rank_dev *rd, size_t n, float *out);
/* The kernel rank_dev_launch runs for rows of stride floats, and how, in one line
 * ("trees_level_local (level-order, depth 6), WG_TREES=64, TREES_DOCS=1, tile 16"). */
void rank_dev_describe(const rank_dev *rd, size_t stride, char *buf, size_t len);
/* The scores of n documents whose rows (stride floats each) are on the device in rows, into the
 * device buffer out (n floats), enqueued on rd's queue without waiting: a stage of a device batch
 * (src/engine/dev_rerank.c) that made the rows there and reads only what it derives from them. */
cls_status rank_dev_enqueue(rank_dev *rd, cl_mem rows, size_t stride, size_t n, cl_mem out);
/* The device's name. */
const char *rank_dev_name(const rank_dev *rd);
void rank_dev_close(rank_dev *rd);

#endif
