/* The features' device twin (features.h: feat_cl): cl/features.cl's features_pairs on one OpenCL
 * device, a batch of pairs at a time. Buffers only grow, so batches after the first allocate
 * nothing on the device unless they are larger. */
#include <stdio.h>
#include <stdlib.h>

#include "device/dev.h"
#include "rank/features.h"
#include "util/err.h"

#define FEAT_WG 64 /* work-items a group (the kernel's WG_FEATURES) */

struct feat_cl {
    dev_ctx dc;   /* the device it runs on, feat_cl_create's */
    cl_program prog;
    cls_scoring scoring;
    int exact; /* correctly rounded division */
    dbuf terms, term_start, num_terms, pair_query, tf_start, docs, tf, out;
};

/* The program built and its kernel registered on c's device. */
static cls_status feat_cl_build(feat_cl *c)
{
    c->exact = clx_correct_div(c->dc.dev.device);
    char opts[256], note[512];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_FEATURES=%u%s%s", FEAT_WG,
             c->exact ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             c->scoring == CLS_SCORING_IMPACT ? " -DSCORE_IMPACT=1" : "");
    static const char *const files[] = {"features.cl", NULL};
    cls_status s = dev_build(&c->dc, files, opts, &c->prog, note, sizeof note);
    if (s == CLS_OK) s = dev_need_kernel(&c->dc, c->prog, "features_pairs");
    return s;
}

cls_status feat_cl_create(const char *device, cls_scoring scoring, feat_cl **out)
{
    if (!device || !out) return err_set(CLS_E_ARG, "feat_cl_create: NULL argument");
    *out = NULL;
    feat_cl *c = calloc(1, sizeof *c);
    if (!c) return err_set(CLS_E_NOMEM, "features on the device: out of memory");
    c->scoring = scoring;
    cls_status s = clx_select(device, &c->dc.dev);
    if (s == CLS_OK) s = clx_params_for(&c->dc.dev.info, &c->dc.prm);
    if (s == CLS_OK) s = dev_open(&c->dc);
    if (s == CLS_OK) s = feat_cl_build(c);
    if (s != CLS_OK) {
        feat_cl_free(c);
        return s;
    }
    *out = c;
    return CLS_OK;
}

void feat_cl_free(feat_cl *c)
{
    if (!c) return;
    dbuf *bufs[] = {&c->terms, &c->term_start, &c->num_terms, &c->pair_query, &c->tf_start, &c->docs, &c->tf, &c->out};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) dev_buf_release(bufs[i]);
    dev_close(&c->dc);
    if (c->prog) clReleaseProgram(c->prog);
    free(c);
}

int feat_cl_exact(const feat_cl *c) { return c->exact; }

cls_status feat_cl_compute(feat_cl *c, const feat_batch *b, float *out)
{
    cls_status s = feat_batch_check(b);
    if (s != CLS_OK) return s;
    if (b->scoring != c->scoring)
        return err_set(CLS_E_ARG, "features on the device: a batch scored %s on a program built for %s",
                       cls_scoring_name(b->scoring), cls_scoring_name(c->scoring));
    if (b->npairs == 0) return CLS_OK;
    size_t out_bytes = (size_t)b->npairs * FEAT_FIXED * sizeof(float);
    if ((s = dev_upload(&c->dc, &c->terms, b->terms, b->nterms * sizeof *b->terms, "feature terms")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->term_start, b->term_start, b->nq * sizeof(uint32_t), "feature queries")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->num_terms, b->num_terms, b->nq * sizeof(uint32_t), "feature queries")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->pair_query, b->pair_query, b->npairs * sizeof(uint32_t), "feature pairs")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->tf_start, b->tf_start, b->npairs * sizeof(uint32_t), "feature pairs")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->docs, b->docs, b->npairs * sizeof *b->docs, "feature documents")) != CLS_OK ||
        (s = dev_upload(&c->dc, &c->tf, b->tf, b->ntf * sizeof(uint32_t), "feature frequencies")) != CLS_OK ||
        (s = dev_buf_need(&c->dc, &c->out, out_bytes, "features")) != CLS_OK)
        return s;
    cl_uint npairs = b->npairs;
    float mu = b->p.mu, lambda = b->p.lambda;
    dev_arg args[] = {DEV_MEM(c->terms.mem),      DEV_MEM(c->term_start.mem), DEV_MEM(c->num_terms.mem),
                      DEV_MEM(c->pair_query.mem), DEV_MEM(c->tf_start.mem),   DEV_MEM(c->docs.mem),
                      DEV_MEM(c->tf.mem),         DEV_U32(npairs),            {sizeof mu, &mu},
                      {sizeof lambda, &lambda},   DEV_MEM(c->out.mem)};
    size_t groups = (b->npairs + FEAT_WG - 1) / FEAT_WG;
    if ((s = dev_run(&c->dc, "features_pairs", args, groups, FEAT_WG, "features")) != CLS_OK) return s;
    cl_int err = clEnqueueReadBuffer(c->dc.queue, c->out.mem, CL_TRUE, 0, out_bytes, out, 0, NULL, NULL);
    dev_profile_collect(&c->dc, err == CL_SUCCESS);
    if (err != CL_SUCCESS) return clx_fail("clEnqueueReadBuffer(features)", err);
    return CLS_OK;
}
