/* The tree ensemble's scores on an OpenCL device (cl/trees.cl: trees_score), through the device
 * layer (src/device/dev.h): the model's arrays uploaded once, then documents scored a batch of
 * rows at a time. Its twin is rank_model_score_rows (model.h), equal bit for bit. */
#ifndef CLS_RANK_DEV_H
#define CLS_RANK_DEV_H

#include <stddef.h>

#include "device/dev.h"
#include "rank/model.h"

typedef struct rank_dev {
    dev_ctx dc;
    cl_program prog;
    dbuf nodes, roots, rows, out;
    uint32_t num_trees;
    float base;
    unsigned wg; /* WG_TREES */
    char note[4400];
} rank_dev;

/* Opens the device spec names ("cpu", "gpu", "P:D", as clx_select takes it), builds trees.cl
 * and uploads m's trees. On failure everything is released. */
cls_status rank_dev_open(rank_dev *rd, const char *spec, const rank_model *m);
/* The scores of n documents (rows of stride floats, stride >= m's num_features) into out. */
cls_status rank_dev_score(rank_dev *rd, const float *rows, size_t stride, size_t n, float *out);
/* The device's name. */
const char *rank_dev_name(const rank_dev *rd);
void rank_dev_close(rank_dev *rd);

#endif
