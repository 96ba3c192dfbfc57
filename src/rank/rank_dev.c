/* The tree ensemble on a device (rank_dev.h). */
#include "rank/rank_dev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

/* Deepest trees laid out as complete level-order arrays (cl/trees.cl: trees_level): a tree of
 * depth D takes 3 x 2^D words however few leaves it has, so deeper models walk nodes. */
#define RANK_LEVEL_MAX_DEPTH 12u
/* The level-order arrays at most, in bytes; a model past it walks nodes. */
#define RANK_LEVEL_MAX_BYTES ((size_t)512 << 20)

/* The program built and its kernels registered on rd->dc, and m's trees (when given) uploaded. */
static cls_status rank_dev_build(rank_dev *rd, const rank_model *m)
{
    const clx_params *p = &rd->dc->prm;
    rd->wg = p->wg_trees ? p->wg_trees : 64;
    while (rd->wg > rd->dc->dev.info.max_work_group && rd->wg > 1) rd->wg /= 2;
    rd->docs = p->trees_docs ? p->trees_docs : 1;
    char opts[256];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_TREES=%u -DTREES_DOCS=%u%s", rd->wg, rd->docs,
             clx_compiler_defines(&rd->dc->dev.info));
    const char *const files[] = {"trees.cl", NULL};
    cls_status s;
    if ((s = dev_build(rd->dc, files, opts, &rd->prog, rd->note, sizeof rd->note)) != CLS_OK ||
        (s = dev_need_kernel(rd->dc, rd->prog, "trees_score")) != CLS_OK ||
        (s = dev_need_kernel(rd->dc, rd->prog, "trees_level")) != CLS_OK ||
        (s = dev_need_kernel(rd->dc, rd->prog, "trees_level_local")) != CLS_OK)
        return s;
    return m ? rank_dev_load(rd, m) : CLS_OK;
}

/* Fills the complete tree at `at` of depth levels below it (words: inner node i at 2i, 2i + 1;
 * leaf j at 2 x inner + j) from m's node nd: a leaf above the last level becomes an inner node
 * that sends every value left (feature 0, no flags, threshold +inf: NaN is taken as 0.0, and
 * every float is <= +inf) over copies of itself, so that every path meets its value. */
static void level_fill(const rank_model *m, uint32_t nd, uint32_t *tree, uint32_t inner, uint32_t at,
                       uint32_t levels)
{
    const abi_tree_node *n = &m->nodes[nd];
    if (levels == 0) { /* the last level: n is a leaf (no tree is deeper than the model) */
        memcpy(&tree[2 * inner + (at - inner)], &n->value, sizeof n->value);
        return;
    }
    int leaf = (n->split & ABI_TREE_LEAF) != 0;
    float t = leaf ? INFINITY : n->value;
    tree[2 * at] = leaf ? 0u : n->split;
    memcpy(&tree[2 * at + 1], &t, sizeof t);
    level_fill(m, leaf ? nd : n->left, tree, inner, 2 * at + 1, levels - 1);
    level_fill(m, leaf ? nd : n->right, tree, inner, 2 * at + 2, levels - 1);
}

/* m's trees as complete level-order arrays on the device, when the parameters ask for them and
 * the model is shallow enough; else rd->level stays 0 and the node walk runs. */
static cls_status level_load(rank_dev *rd, const rank_model *m)
{
    rd->level = 0;
    if (rd->dc->prm.trees_layout != 1 || m->max_depth > RANK_LEVEL_MAX_DEPTH) return CLS_OK;
    uint32_t depth = m->max_depth, inner = (1u << depth) - 1u;
    uint32_t words = 2 * inner + (1u << depth);
    words += words & 1u; /* even, so that every tree's inner nodes start 8-byte aligned */
    size_t bytes = (size_t)m->num_trees * words * sizeof(uint32_t);
    if (bytes > RANK_LEVEL_MAX_BYTES || bytes > rd->dc->dev.info.max_alloc) return CLS_OK;
    uint32_t *all = calloc((size_t)m->num_trees * words, sizeof *all);
    if (!all) return err_set(CLS_E_NOMEM, "out of memory for the model's level-order trees (%zu bytes)", bytes);
    for (uint32_t t = 0; t < m->num_trees; t++) level_fill(m, m->roots[t], all + (size_t)t * words, inner, 0, depth);
    cls_status s = dev_upload(rd->dc, &rd->level_trees, all, bytes, "model level-order trees");
    free(all);
    if (s != CLS_OK) return s;
    rd->level = 1;
    rd->depth = depth;
    rd->tree_words = words;
    return CLS_OK;
}

cls_status rank_dev_load(rank_dev *rd, const rank_model *m)
{
    cls_status s;
    rd->num_trees = m->num_trees;
    rd->base = m->base;
    if ((s = dev_upload(rd->dc, &rd->nodes, m->nodes, (size_t)m->num_nodes * sizeof *m->nodes, "model nodes")) != CLS_OK ||
        (s = dev_upload(rd->dc, &rd->roots, m->roots, ((size_t)m->num_trees + 1) * sizeof *m->roots, "model roots")) != CLS_OK)
        return s;
    return level_load(rd, m);
}

cls_status rank_dev_open(rank_dev *rd, const char *spec, const rank_model *m)
{
    memset(rd, 0, sizeof *rd);
    rd->dc = &rd->own;
    cls_status s = clx_select(spec, &rd->own.dev);
    if (s != CLS_OK) return s;
    if ((s = clx_params_for(&rd->own.dev.info, &rd->own.prm)) != CLS_OK) return s;
    if ((s = dev_open(&rd->own)) != CLS_OK || (s = rank_dev_build(rd, m)) != CLS_OK) {
        rank_dev_close(rd);
        return s;
    }
    return CLS_OK;
}

cls_status rank_dev_open_on(rank_dev *rd, dev_ctx *dc, const rank_model *m)
{
    memset(rd, 0, sizeof *rd);
    rd->dc = dc;
    cls_status s = rank_dev_build(rd, m);
    if (s != CLS_OK) rank_dev_close(rd);
    return s;
}

const char *rank_dev_name(const rank_dev *rd)
{
    return rd->dc->dev.info.name;
}

/* Words of a row in trees_level_local's local memory: stride made odd, so that the work-items
 * reading one feature of their rows fall in different banks. */
static size_t local_stride(size_t stride) { return stride | 1u; }

/* Whether the rows of a work-group (wg x docs of them) run from local memory: the parameters
 * ask for it and they fit in the device's local memory. */
static int rows_local(const rank_dev *rd, size_t stride)
{
    return rd->dc->prm.trees_rows_local == 1 &&
           (uint64_t)rd->wg * rd->docs * local_stride(stride) * sizeof(float) <= rd->dc->dev.info.local_mem;
}

/* Trees trees_level_local stages in local memory at a time beside the rows of stride floats:
 * TREES_TILE, fewer where local memory holds fewer, none past the model's trees. */
static cl_uint tile_of(const rank_dev *rd, size_t stride)
{
    uint64_t rows = (uint64_t)rd->wg * rd->docs * local_stride(stride) * sizeof(float), room = rd->dc->dev.info.local_mem;
    uint64_t fit = room > rows ? (room - rows) / ((uint64_t)rd->tree_words * sizeof(uint32_t)) : 0;
    uint64_t tile = rd->dc->prm.trees_tile;
    if (tile > fit) tile = fit;
    if (tile > rd->num_trees) tile = rd->num_trees;
    return (cl_uint)tile;
}

static cls_status check_shape(size_t stride, size_t n)
{
    if (n > UINT32_MAX || stride == 0 || stride > UINT32_MAX || n > SIZE_MAX / sizeof(float) / stride)
        return err_set(CLS_E_ARG, "%zu documents of %zu features: too many for one launch", n, stride);
    return CLS_OK;
}

cls_status rank_dev_put_rows(rank_dev *rd, const float *rows, size_t stride, size_t n)
{
    cls_status s = check_shape(stride, n);
    if (s != CLS_OK || n == 0) return s;
    return dev_upload(rd->dc, &rd->rows, rows, n * stride * sizeof(float), "document features");
}

/* The layout's kernel over n rows (stride floats each) in the device buffer rows, scores into out. */
static cls_status launch_on(rank_dev *rd, cl_mem rows, size_t stride, size_t n, cl_mem out)
{
    cls_status s = check_shape(stride, n);
    if (s != CLS_OK || n == 0) return s;
    cl_uint st = (cl_uint)stride, nd = (cl_uint)n, nt = rd->num_trees, base_bits;
    memcpy(&base_bits, &rd->base, sizeof base_bits);
    if (!rd->level) {
        dev_arg a[] = {DEV_MEM(rows), DEV_U32(st),  DEV_U32(nd), DEV_MEM(rd->nodes.mem), DEV_MEM(rd->roots.mem),
                       DEV_U32(nt),           DEV_U32(base_bits), DEV_MEM(out)};
        return dev_run(rd->dc, "trees_score", a, (n + rd->wg - 1) / rd->wg, rd->wg, "trees");
    }
    size_t per_group = (size_t)rd->wg * rd->docs, groups = (n + per_group - 1) / per_group;
    cl_uint words = rd->tree_words, depth = rd->depth;
    if (!rows_local(rd, stride)) {
        dev_arg a[] = {DEV_MEM(rows), DEV_U32(st), DEV_U32(nd), DEV_MEM(rd->level_trees.mem), DEV_U32(words),
                       DEV_U32(depth),        DEV_U32(nt), DEV_U32(base_bits), DEV_MEM(out)};
        return dev_run(rd->dc, "trees_level", a, groups, rd->wg, "trees");
    }
    cl_uint lst = (cl_uint)local_stride(stride), tile = tile_of(rd, stride);
    dev_arg a[] = {DEV_MEM(rows), DEV_U32(st), DEV_U32(nd), DEV_MEM(rd->level_trees.mem), DEV_U32(words),
                   DEV_U32(depth),        DEV_U32(nt), DEV_U32(base_bits), DEV_MEM(out), DEV_U32(lst),
                   {per_group * lst * sizeof(float), NULL}, DEV_U32(tile),
                   {(tile ? tile * words : 1u) * sizeof(uint32_t), NULL}};
    return dev_run(rd->dc, "trees_level_local", a, groups, rd->wg, "trees");
}

cls_status rank_dev_launch(rank_dev *rd, size_t stride, size_t n)
{
    cls_status s = check_shape(stride, n);
    if (s != CLS_OK || n == 0) return s;
    if ((s = dev_buf_need(rd->dc, &rd->out, n * sizeof(float), "document scores")) != CLS_OK) return s;
    return launch_on(rd, rd->rows.mem, stride, n, rd->out.mem);
}

cls_status rank_dev_enqueue(rank_dev *rd, cl_mem rows, size_t stride, size_t n, cl_mem out)
{
    return launch_on(rd, rows, stride, n, out);
}

cls_status rank_dev_get_scores(rank_dev *rd, size_t n, float *out)
{
    if (n == 0) return CLS_OK;
    cl_int err = clEnqueueReadBuffer(rd->dc->queue, rd->out.mem, CL_TRUE, 0, n * sizeof(float), out, 0, NULL, NULL);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueReadBuffer", err), "reading the scores: ");
    return CLS_OK;
}

cls_status rank_dev_score(rank_dev *rd, const float *rows, size_t stride, size_t n, float *out)
{
    if (n == 0) return CLS_OK;
    cls_status s;
    if ((s = rank_dev_put_rows(rd, rows, stride, n)) == CLS_OK && (s = rank_dev_launch(rd, stride, n)) == CLS_OK)
        s = rank_dev_get_scores(rd, n, out);
    dev_profile_collect(rd->dc, s == CLS_OK);
    return s;
}

void rank_dev_describe(const rank_dev *rd, size_t stride, char *buf, size_t len)
{
    if (!rd->level)
        snprintf(buf, len, "trees_score (node walk), WG_TREES=%u", rd->wg);
    else if (!rows_local(rd, stride))
        snprintf(buf, len, "trees_level (level-order, depth %u), WG_TREES=%u, TREES_DOCS=%u", rd->depth, rd->wg, rd->docs);
    else
        snprintf(buf, len, "trees_level_local (level-order, depth %u), WG_TREES=%u, TREES_DOCS=%u, tile %u", rd->depth,
                 rd->wg, rd->docs, tile_of(rd, stride));
}

void rank_dev_close(rank_dev *rd)
{
    dbuf *bufs[] = {&rd->nodes, &rd->roots, &rd->rows, &rd->out, &rd->level_trees};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    if (rd->dc == &rd->own) dev_close(&rd->own); /* a borrowed device stays its owner's */
    if (rd->prog) clReleaseProgram(rd->prog);
    rd->prog = NULL;
}
