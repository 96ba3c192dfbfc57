/* The tree ensemble on a device (rank_dev.h). */
#include "rank/rank_dev.h"

#include <stdio.h>
#include <string.h>

#include "util/err.h"

/* Documents a work-group (WG_TREES): a work-item a document, no local memory, so any width the
 * device allows; a small one keeps a few hundred documents (one query's candidates) spread over
 * the compute units. */
#define RANK_WG 64u

/* The program built and its kernel registered on rd->dc, and m's trees (when given) uploaded. */
static cls_status rank_dev_build(rank_dev *rd, const rank_model *m)
{
    rd->wg = RANK_WG;
    while (rd->wg > rd->dc->dev.info.max_work_group && rd->wg > 1) rd->wg /= 2;
    char opts[256];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_TREES=%u%s", rd->wg, clx_compiler_defines(&rd->dc->dev.info));
    const char *const files[] = {"trees.cl", NULL};
    cls_status s;
    if ((s = dev_build(rd->dc, files, opts, &rd->prog, rd->note, sizeof rd->note)) != CLS_OK ||
        (s = dev_need_kernel(rd->dc, rd->prog, "trees_score")) != CLS_OK)
        return s;
    return m ? rank_dev_load(rd, m) : CLS_OK;
}

cls_status rank_dev_load(rank_dev *rd, const rank_model *m)
{
    cls_status s;
    rd->num_trees = m->num_trees;
    rd->base = m->base;
    if ((s = dev_upload(rd->dc, &rd->nodes, m->nodes, (size_t)m->num_nodes * sizeof *m->nodes, "model nodes")) != CLS_OK ||
        (s = dev_upload(rd->dc, &rd->roots, m->roots, ((size_t)m->num_trees + 1) * sizeof *m->roots, "model roots")) != CLS_OK)
        return s;
    return CLS_OK;
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

cls_status rank_dev_enqueue(rank_dev *rd, cl_mem rows, size_t stride, size_t n, cl_mem out)
{
    if (n == 0) return CLS_OK;
    if (n > UINT32_MAX || stride == 0 || stride > UINT32_MAX)
        return err_set(CLS_E_ARG, "%zu documents of %zu features: too many for one launch", n, stride);
    cl_uint st = (cl_uint)stride, nd = (cl_uint)n, nt = rd->num_trees, base_bits;
    memcpy(&base_bits, &rd->base, sizeof base_bits);
    dev_arg a[] = {DEV_MEM(rows), DEV_U32(st), DEV_U32(nd), DEV_MEM(rd->nodes.mem), DEV_MEM(rd->roots.mem),
                   DEV_U32(nt),   DEV_U32(base_bits), DEV_MEM(out)};
    return dev_run(rd->dc, "trees_score", a, (n + rd->wg - 1) / rd->wg, rd->wg, "trees");
}

cls_status rank_dev_score(rank_dev *rd, const float *rows, size_t stride, size_t n, float *out)
{
    if (n == 0) return CLS_OK;
    if (n > UINT32_MAX || stride == 0 || stride > UINT32_MAX || n > SIZE_MAX / sizeof(float) / stride)
        return err_set(CLS_E_ARG, "%zu documents of %zu features: too many for one launch", n, stride);
    cls_status s;
    if ((s = dev_upload(rd->dc, &rd->rows, rows, n * stride * sizeof(float), "document features")) != CLS_OK ||
        (s = dev_buf_need(rd->dc, &rd->out, n * sizeof(float), "document scores")) != CLS_OK)
        return s;
    s = rank_dev_enqueue(rd, rd->rows.mem, stride, n, rd->out.mem);
    if (s == CLS_OK) {
        cl_int err = clEnqueueReadBuffer(rd->dc->queue, rd->out.mem, CL_TRUE, 0, n * sizeof(float), out, 0, NULL, NULL);
        if (err != CL_SUCCESS) s = err_wrap(clx_fail("clEnqueueReadBuffer", err), "reading the scores: ");
    }
    dev_profile_collect(rd->dc, s == CLS_OK);
    return s;
}

void rank_dev_close(rank_dev *rd)
{
    dbuf *bufs[] = {&rd->nodes, &rd->roots, &rd->rows, &rd->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    if (rd->dc == &rd->own) dev_close(&rd->own); /* a borrowed device stays its owner's */
    if (rd->prog) clReleaseProgram(rd->prog);
    rd->prog = NULL;
}
