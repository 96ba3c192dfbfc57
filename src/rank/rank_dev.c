/* The tree ensemble on a device (rank_dev.h). */
#include "rank/rank_dev.h"

#include <stdio.h>
#include <string.h>

#include "util/err.h"

/* Documents a work-group (WG_TREES): a work-item a document, no local memory, so any width the
 * device allows; a small one keeps a few hundred documents (one query's candidates) spread over
 * the compute units. */
#define RANK_WG 64u

cls_status rank_dev_open(rank_dev *rd, const char *spec, const rank_model *m)
{
    memset(rd, 0, sizeof *rd);
    cls_status s = clx_select(spec, &rd->dc.dev);
    if (s != CLS_OK) return s;
    if ((s = clx_params_for(&rd->dc.dev.info, &rd->dc.prm)) != CLS_OK) return s;
    rd->wg = RANK_WG;
    while (rd->wg > rd->dc.dev.info.max_work_group && rd->wg > 1) rd->wg /= 2;
    rd->num_trees = m->num_trees;
    rd->base = m->base;
    if ((s = dev_open(&rd->dc)) != CLS_OK) goto fail;
    char opts[256];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_TREES=%u%s", rd->wg, clx_compiler_defines(&rd->dc.dev.info));
    const char *const files[] = {"trees.cl", NULL};
    if ((s = dev_build(&rd->dc, files, opts, &rd->prog, rd->note, sizeof rd->note)) != CLS_OK ||
        (s = dev_add_kernel(&rd->dc, rd->prog, "trees_score")) != CLS_OK ||
        (s = dev_upload(&rd->dc, &rd->nodes, m->nodes, (size_t)m->num_nodes * sizeof *m->nodes, "model nodes")) != CLS_OK ||
        (s = dev_upload(&rd->dc, &rd->roots, m->roots, ((size_t)m->num_trees + 1) * sizeof *m->roots, "model roots")) != CLS_OK)
        goto fail;
    return CLS_OK;
fail:
    rank_dev_close(rd);
    return s;
}

const char *rank_dev_name(const rank_dev *rd)
{
    return rd->dc.dev.info.name;
}

cls_status rank_dev_score(rank_dev *rd, const float *rows, size_t stride, size_t n, float *out)
{
    if (n == 0) return CLS_OK;
    if (n > UINT32_MAX || stride == 0 || stride > UINT32_MAX || n > SIZE_MAX / sizeof(float) / stride)
        return err_set(CLS_E_ARG, "%zu documents of %zu features: too many for one launch", n, stride);
    cls_status s;
    if ((s = dev_upload(&rd->dc, &rd->rows, rows, n * stride * sizeof(float), "document features")) != CLS_OK ||
        (s = dev_buf_need(&rd->dc, &rd->out, n * sizeof(float), "document scores")) != CLS_OK)
        return s;
    cl_uint st = (cl_uint)stride, nd = (cl_uint)n, nt = rd->num_trees, base_bits;
    memcpy(&base_bits, &rd->base, sizeof base_bits);
    dev_arg a[] = {DEV_MEM(rd->rows.mem), DEV_U32(st),  DEV_U32(nd), DEV_MEM(rd->nodes.mem), DEV_MEM(rd->roots.mem),
                   DEV_U32(nt),           DEV_U32(base_bits), DEV_MEM(rd->out.mem)};
    s = dev_run(&rd->dc, "trees_score", a, (n + rd->wg - 1) / rd->wg, rd->wg, "trees");
    if (s == CLS_OK) {
        cl_int err = clEnqueueReadBuffer(rd->dc.queue, rd->out.mem, CL_TRUE, 0, n * sizeof(float), out, 0, NULL, NULL);
        if (err != CL_SUCCESS) s = err_wrap(clx_fail("clEnqueueReadBuffer", err), "reading the scores: ");
    }
    dev_profile_collect(&rd->dc, s == CLS_OK);
    return s;
}

void rank_dev_close(rank_dev *rd)
{
    dbuf *bufs[] = {&rd->nodes, &rd->roots, &rd->rows, &rd->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    dev_close(&rd->dc);
    if (rd->prog) clReleaseProgram(rd->prog);
    rd->prog = NULL;
}
