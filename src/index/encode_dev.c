/* Posting lists encoded on a device (encode_dev.h): the host cuts a chunk into its block table,
 * uploads it with the postings, and runs cl/encode.cl's passes (list widths for pfor, the blocks
 * into scratch slots, their offsets, the words packed), a batch of blocks at a time so that the
 * scratch stays bounded; then reads back the block records and the words. */
#include "index/encode_dev.h"

#include <stdio.h>
#include <string.h>

#include "codec/codec.h"
#include "util/err.h"
#include "util/vec.h"

/* Words of scratch at most (4 bytes each): bounds a batch's blocks, whatever the block size. */
#define ENC_SCRATCH_WORDS (1u << 24)
/* Work-groups of one launch at most: with WG_ENCODE <= 1024, fewer than 2^31 work-items. */
#define ENC_LAUNCH_GROUPS (1u << 20)

/* Enqueues a blocking write of bytes of data into b (grown first), counted as "upload". */
static cls_status put(idx_encoder *e, dbuf *b, const void *data, size_t bytes, const char *what)
{
    cls_status s = dev_buf_need(&e->dc, b, bytes, what);
    if (s != CLS_OK || bytes == 0) return s;
    cl_event ev = NULL;
    cl_int err = clEnqueueWriteBuffer(e->dc.queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueWriteBuffer", err), "uploading %s: ", what);
    return dev_record(&e->dc, ev, "upload", bytes);
}

/* A blocking read of bytes from b into data, counted as "download". */
static cls_status get(idx_encoder *e, dbuf *b, void *data, size_t bytes, const char *what)
{
    if (bytes == 0) return CLS_OK;
    cl_event ev = NULL;
    cl_int err = clEnqueueReadBuffer(e->dc.queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, &ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueReadBuffer", err), "reading %s: ", what);
    return dev_record(&e->dc, ev, "download", bytes);
}

cls_status idx_encoder_open(idx_encoder *e, const char *spec, const cls_build_opts *o, cls_scoring scoring)
{
    return idx_encoder_open_with(e, spec, o, scoring, NULL);
}

cls_status idx_encoder_device(const char *spec, cls_scoring scoring, clx_device *dev)
{
    if (!spec || strcmp(spec, "ref") == 0)
        return err_set(CLS_E_ARG, "encoding needs an OpenCL device (gpu, cpu, P:D), not '%s'; without one the host "
                       "encodes", spec ? spec : "(null)");
    cls_status s = clx_select(spec, dev);
    if (s != CLS_OK) return s;
    /* the host's max_score is (w * f) / (f + norm) rounded once: a device that cannot divide so
     * would write other block maxima than the host, and the file would differ */
    if (scoring == CLS_SCORING_BM25 && !clx_correct_div(dev->device))
        return err_set(CLS_E_NODEVICE, "%s: no correctly rounded single-precision division, so its BM25 block "
                       "maxima would differ from the host's; encode on the host (no device)", dev->info.name);
    return CLS_OK;
}

cls_status idx_encoder_open_with(idx_encoder *e, const char *spec, const cls_build_opts *o, cls_scoring scoring,
                                 const char *params)
{
    memset(e, 0, sizeof *e);
    cls_status s = idx_check_opts(o);
    if (s != CLS_OK) return s;
    if (scoring != CLS_SCORING_BM25 && scoring != CLS_SCORING_IMPACT)
        return err_set(CLS_E_ARG, "scoring %d: neither BM25 nor impact", (int)scoring);
    e->o = *o;
    e->scoring = scoring;
    if ((s = idx_encoder_device(spec, scoring, &e->dc.dev)) != CLS_OK ||
        (s = clx_params_for(&e->dc.dev.info, &e->dc.prm)) != CLS_OK)
        return s;
    if (params && ((s = clx_params_parse(params, &e->dc.prm, "encoder parameters")) != CLS_OK ||
                   (s = clx_params_check(&e->dc.dev.info, &e->dc.prm, "encoder parameters")) != CLS_OK))
        return s;
    const cls_device_info *info = &e->dc.dev.info;
    const int cdiv = clx_correct_div(e->dc.dev.device);
    if ((s = dev_open(&e->dc)) != CLS_OK) goto fail;
    char opts[512], note[4400];
    snprintf(opts, sizeof opts,
             "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DPFOR_DEPTH=%u -DENCODE_CODEC=%d -DWG_ENCODE=%u -DWG_SCAN_ALGO=%u%s%s%s",
             o->block_size, o->pfor_depth, (int)o->codec, e->dc.prm.wg_encode, e->dc.prm.wg_scan_algo,
             cdiv ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             scoring == CLS_SCORING_IMPACT ? " -DSCORE_IMPACT=1" : "", clx_compiler_defines(info));
    const char *const files[] = {"encode.cl", NULL};
    if ((s = dev_build(&e->dc, files, opts, &e->prog, note, sizeof note)) != CLS_OK) goto fail;
    static const char *const kernels[] = {"encode_list_params", "encode_blocks", "encode_offsets", "encode_compact"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if ((s = dev_add_kernel(&e->dc, e->prog, kernels[i])) != CLS_OK) goto fail;
    e->stride = 2 * cdc_max_words(o->block_size);
    e->batch_blocks = ENC_SCRATCH_WORDS / e->stride;
    uint64_t fit = info->max_alloc / ((uint64_t)e->stride * 4); /* the scratch is one buffer */
    if (fit < e->batch_blocks) e->batch_blocks = (uint32_t)fit;
    if (e->batch_blocks == 0) {
        s = err_set(CLS_E_DEVMEM, "%s: a buffer of %u words is more than the device allows", info->name, e->stride);
        goto fail;
    }
    char prm[256];
    snprintf(prm, sizeof prm, "WG_ENCODE=%u WG_SCAN_ALGO=%u", e->dc.prm.wg_encode, e->dc.prm.wg_scan_algo);
    snprintf(e->desc, sizeof e->desc, "device %s (%s), %s, %u blocks a batch (%.300s)", info->name, e->dc.dev.reason,
             prm, e->batch_blocks, e->dc.prm.source);
    return CLS_OK;
fail:
    idx_encoder_close(e);
    return s;
}

const char *idx_encoder_describe(const idx_encoder *e) { return e->desc; }

cls_status idx_encoder_norms(idx_encoder *e, const float *norm, uint32_t num_docs)
{
    e->norm = NULL;
    cls_status s = put(e, &e->d_norm, norm, (size_t)num_docs * sizeof *norm, "the documents' norms");
    dev_profile_collect(&e->dc, s == CLS_OK);
    if (s == CLS_OK) e->norm = norm;
    return s;
}

/* The chunk's list starts (from its first posting) and block table (each block's first posting
 * and list) into e->ls and e->bmap; *nblocks, *postings receive their counts. */
static cls_status block_table(idx_encoder *e, const idx_chunk *c, uint32_t *nblocks, uint32_t *postings)
{
    const uint64_t base = c->list_start[0], P = c->list_start[c->num_lists] - base, B = e->o.block_size;
    if (P > UINT32_MAX - B) return err_set(CLS_E_ARG, "a chunk of %llu postings: fewer than 2^32 - %llu, please",
                                           (unsigned long long)P, (unsigned long long)B);
    uint64_t nb = 0;
    for (uint32_t i = 0; i < c->num_lists; i++) nb += (c->list_start[i + 1] - c->list_start[i] + B - 1) / B;
    if (!vec_reserve(&e->ls, &e->ls_cap, (size_t)c->num_lists + 1, sizeof *e->ls) ||
        !vec_reserve(&e->bmap, &e->bmap_cap, 2 * (size_t)nb + 2, sizeof *e->bmap))
        return err_set(CLS_E_NOMEM, "encoding on the device: out of memory for the block table");
    uint64_t k = 0;
    for (uint32_t i = 0; i < c->num_lists; i++) {
        uint32_t s = (uint32_t)(c->list_start[i] - base), z = (uint32_t)(c->list_start[i + 1] - base);
        e->ls[i] = s;
        for (uint32_t p = s; p < z; p += (uint32_t)B, k++) {
            e->bmap[2 * k] = p;
            e->bmap[2 * k + 1] = i;
        }
    }
    e->ls[c->num_lists] = (uint32_t)P;
    *nblocks = (uint32_t)nb;
    *postings = (uint32_t)P;
    return CLS_OK;
}

/* One batch: blocks [b0, b0 + nb) of the chunk already uploaded, into blocks[0..nb) and wb. */
static cls_status encode_batch(idx_encoder *e, uint32_t b0, uint32_t nb, cl_uint use_norm, idx_block *blocks,
                               idx_words *wb)
{
    cls_status s;
    const size_t wg = e->dc.prm.wg_encode;
    if (wb->n > UINT32_MAX) return err_set(CLS_E_ARG, "index too large: postings exceed 2^32 words");
    if ((s = dev_buf_need(&e->dc, &e->d_meta, (size_t)nb * sizeof(idx_block), "block records")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_counts, (size_t)nb * 4, "block word counts")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_offs, (size_t)nb * 4, "block offsets")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_total, 4, "batch words")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_scratch, (size_t)nb * e->stride * 4, "encoding scratch")) != CLS_OK)
        return s;
    cl_uint block0 = b0, stride = e->stride, nblocks = nb, base = (cl_uint)wb->n;
    dev_arg ab[] = {DEV_MEM(e->d_docs.mem),    DEV_MEM(e->d_freqs.mem),   DEV_MEM(e->d_ls.mem),
                    DEV_MEM(e->d_bmap.mem),    DEV_U32(block0),           DEV_MEM(e->d_weight.mem),
                    DEV_MEM(e->d_lparam.mem),  DEV_MEM(e->d_norm.mem),    DEV_U32(use_norm),
                    DEV_MEM(e->d_meta.mem),    DEV_MEM(e->d_counts.mem),  DEV_MEM(e->d_scratch.mem),
                    DEV_U32(stride)};
    dev_arg ao[] = {DEV_MEM(e->d_counts.mem), DEV_U32(nblocks),       DEV_U32(base),
                    DEV_MEM(e->d_meta.mem),   DEV_MEM(e->d_offs.mem), DEV_MEM(e->d_total.mem)};
    cl_uint total = 0;
    if ((s = dev_run(&e->dc, "encode_blocks", ab, nb, wg, "encode")) != CLS_OK ||
        (s = dev_run(&e->dc, "encode_offsets", ao, 1, wg, "offsets")) != CLS_OK ||
        (s = get(e, &e->d_total, &total, sizeof total, "the batch's word count")) != CLS_OK)
        return s;
    if (wb->n + total > UINT32_MAX) return err_set(CLS_E_ARG, "index too large: postings exceed 2^32 words");
    if ((s = dev_buf_need(&e->dc, &e->d_words, (size_t)total * 4, "encoded words")) != CLS_OK) return s;
    dev_arg ac[] = {DEV_MEM(e->d_scratch.mem), DEV_U32(stride), DEV_MEM(e->d_counts.mem), DEV_MEM(e->d_offs.mem),
                    DEV_MEM(e->d_words.mem)};
    if ((s = dev_run(&e->dc, "encode_compact", ac, nb, wg, "compact")) != CLS_OK) return s;
    if (!vec_reserve(&wb->w, &wb->cap, wb->n + total, sizeof *wb->w))
        return err_set(CLS_E_NOMEM, "encoding: out of memory for the postings");
    if ((s = get(e, &e->d_meta, blocks, (size_t)nb * sizeof(idx_block), "the block records")) != CLS_OK ||
        (s = get(e, &e->d_words, wb->w + wb->n, (size_t)total * 4, "the encoded words")) != CLS_OK)
        return s;
    wb->n += total;
    return CLS_OK;
}

static cls_status encode_chunk(idx_encoder *e, const idx_chunk *c, const float *norm, idx_block *blocks, idx_words *wb)
{
    uint32_t nb = 0, P = 0;
    cls_status s = block_table(e, c, &nb, &P);
    if (s != CLS_OK || nb == 0) return s;
    const uint32_t L = c->num_lists;
    const size_t wg = e->dc.prm.wg_encode;
    if ((s = put(e, &e->d_docs, c->docs, (size_t)P * 4, "the postings' docIDs")) != CLS_OK ||
        (s = put(e, &e->d_freqs, c->freqs, (size_t)P * 4, "the postings' frequencies")) != CLS_OK ||
        (s = put(e, &e->d_ls, e->ls, ((size_t)L + 1) * 4, "the list starts")) != CLS_OK ||
        (s = put(e, &e->d_bmap, e->bmap, (size_t)nb * 8, "the block table")) != CLS_OK ||
        (s = put(e, &e->d_weight, c->weight, (size_t)L * sizeof(float), "the lists' weights")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_lparam, (size_t)L * 8, "the lists' parameters")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &e->d_norm, 4, "the documents' norms")) != CLS_OK)
        return s;
    /* a launch's work-items stay below 2^31 whatever the number of lists */
    for (cl_uint l0 = 0; cdc_get(e->o.codec)->list_param && l0 < L; l0 += ENC_LAUNCH_GROUPS) {
        dev_arg al[] = {DEV_MEM(e->d_docs.mem), DEV_MEM(e->d_freqs.mem), DEV_MEM(e->d_ls.mem), DEV_U32(l0),
                        DEV_MEM(e->d_lparam.mem)};
        size_t groups = L - l0 < ENC_LAUNCH_GROUPS ? L - l0 : ENC_LAUNCH_GROUPS;
        if ((s = dev_run(&e->dc, "encode_list_params", al, groups, wg, "list params")) != CLS_OK) return s;
    }
    cl_uint use_norm = norm != NULL;
    for (uint32_t b0 = 0; b0 < nb; b0 += e->batch_blocks) {
        uint32_t n = nb - b0 < e->batch_blocks ? nb - b0 : e->batch_blocks;
        if ((s = encode_batch(e, b0, n, use_norm, blocks + b0, wb)) != CLS_OK) return s;
    }
    return CLS_OK;
}

cls_status idx_encode_chunk_dev(idx_encoder *e, const cls_build_opts *o, const idx_chunk *c, cls_scoring scoring,
                                const float *norm, idx_block *blocks, idx_words *wb)
{
    if (o->codec != e->o.codec || o->block_size != e->o.block_size ||
        (cdc_get(o->codec)->uses_depth && o->pfor_depth != e->o.pfor_depth) || scoring != e->scoring)
        return err_set(CLS_E_ARG,
                       "encoding on the device: the encoder was built for %s, block %u, depth %u, %s scoring",
                       cls_codec_name(e->o.codec), e->o.block_size, e->o.pfor_depth,
                       e->scoring == CLS_SCORING_IMPACT ? "impact" : "BM25");
    if (norm && norm != e->norm)
        return err_set(CLS_E_ARG, "encoding on the device: norms not uploaded (idx_encoder_norms)");
    if (c->num_lists == 0) return CLS_OK;
    cls_status s = encode_chunk(e, c, norm, blocks, wb);
    dev_profile_collect(&e->dc, s == CLS_OK);
    return s;
}

void idx_encoder_close(idx_encoder *e)
{
    dbuf *bufs[] = {&e->d_docs, &e->d_freqs, &e->d_ls,     &e->d_bmap,  &e->d_weight,  &e->d_lparam, &e->d_norm,
                    &e->d_meta, &e->d_counts, &e->d_offs, &e->d_total, &e->d_scratch, &e->d_words};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_buf_release(bufs[i]);
    dev_close(&e->dc);
    if (e->prog) clReleaseProgram(e->prog);
    e->prog = NULL;
    free(e->ls);
    free(e->bmap);
    e->ls = e->bmap = NULL;
    e->ls_cap = e->bmap_cap = 0;
}
