/* The OpenCL engine: the index's blocks and words live on the device; each batch of queries
 * goes through the four kernel families.
 *
 *   host: plan a batch (which blocks to decode, where each list lands, per-query descriptors)
 *   ---- one upload: tasks | qinfo | qterm -------------------------------------------------->
 *   decode_blocks   one work-group per block: bit unpacking + work-group prefix sum
 *   AND: intersect_and (one work-group per query) -> score_and (BM25 of each candidate)
 *   OR:  score_or (dense accumulator row per query, per-term accumulation)
 *   topk_select     one work-group per query: radix select, ordered compaction, bitonic sort
 *   <--- one read: counts | docIDs | scores ------------------------------------------------
 *
 * Every buffer is sized from the data of the batch and kept for the next one (capacities
 * only grow), so the hot path allocates nothing per query. A batch holds as many queries as
 * fit the device's memory budget, at most CLX_MAX_BATCH. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/clx.h"
#include "index/bm25.h"
#include "query/engine.h"
#include "util/err.h"

#define CLX_MAX_BATCH 1024u
#define MIN_BUF 64u

/* Profiled steps of a batch. */
enum { EV_UP, EV_DECODE, EV_INTERSECT, EV_SCORE, EV_TOPK, EV_DOWN, EV_COUNT };

typedef struct dbuf {
    cl_mem mem;
    size_t cap; /* bytes */
} dbuf;

struct clx_engine {
    const cls_index *idx;
    clx_device dev;
    clx_params prm;
    cl_context ctx;
    cl_command_queue queue;
    cl_program prog, prog_dec; /* query kernels; the index's decoder */
    cl_kernel k_decode, k_intersect, k_score_and, k_score_or, k_topk;
    cl_mem d_words, d_blocks, d_norms;
    float norm_k1, norm_b;
    dbuf in, docs, freqs, cand, cscore, ncand, acc, sdoc, sscore, out;
    uint32_t *h_in;
    size_t h_in_cap; /* elements */
    uint32_t *h_out;
    size_t h_out_cap;
    float *h_norms;
    uint32_t *slot;  /* per term: decoded offset + 1 within the current batch, 0 = not planned */
    uint32_t *touched;
    size_t budget;   /* bytes the per-batch buffers may take together */
    double build_secs;
    int from_cache;
    cls_profile prof;   /* of the last search */
    cl_event ev[EV_COUNT]; /* the batch in flight, one per step */
};

/* Grows a device buffer to hold need bytes (contents are not kept). */
static cls_status dbuf_need(clx_engine *e, dbuf *b, size_t need, const char *what)
{
    if (need < MIN_BUF) need = MIN_BUF;
    if (b->mem && b->cap >= need) return CLS_OK;
    if (need > e->dev.info.max_alloc)
        return err_set(CLS_E_DEVMEM, "%s needs %zu bytes, more than the device allows in one buffer (%llu)", what,
                       need, (unsigned long long)e->dev.info.max_alloc);
    if (b->mem) clReleaseMemObject(b->mem);
    size_t cap = b->cap ? b->cap : need;
    while (cap < need) cap *= 2;
    if (cap > e->dev.info.max_alloc) cap = need;
    cl_int err;
    b->mem = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, cap, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        b->mem = NULL;
        b->cap = 0;
        return err_wrap(clx_fail("clCreateBuffer", err), "allocating %s (%zu bytes): ", what, cap);
    }
    b->cap = cap;
    return CLS_OK;
}

static void *host_need(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap) return *p;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q) return NULL;
    *p = q;
    *cap = c;
    return q;
}

static cls_status make_kernel(cl_program prog, const char *name, cl_kernel *k)
{
    cl_int err;
    *k = clCreateKernel(prog, name, &err);
    if (!*k || err != CL_SUCCESS) return err_wrap(clx_fail("clCreateKernel", err), "kernel %s: ", name);
    return CLS_OK;
}

int clx_correct_div(cl_device_id d)
{
    cl_device_fp_config cfg = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof cfg, &cfg, NULL) != CL_SUCCESS) return 0;
    return (cfg & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
}

cls_status clx_create(const cls_index *idx, const char *spec, const clx_params *prm, clx_engine **out, char *desc,
                      size_t desc_len)
{
    *out = NULL;
    clx_engine *e = calloc(1, sizeof *e);
    if (!e) return err_set(CLS_E_NOMEM, "out of memory");
    e->idx = idx;
    e->norm_k1 = e->norm_b = -1;
    cls_status s = clx_select(spec, &e->dev);
    if (s != CLS_OK) goto fail;
    if (prm) {
        e->prm = *prm;
        if ((s = clx_params_check(&e->dev.info, &e->prm, e->prm.source)) != CLS_OK) goto fail;
    } else if ((s = clx_params_for(&e->dev.info, &e->prm)) != CLS_OK) {
        goto fail;
    }
    if (e->dev.info.max_work_group < idx->block_size) {
        s = err_set(CLS_E_NODEVICE, "%s: work-groups of %zu, the decoder needs %u (the index's block size; "
                    "rebuild with a smaller --block)", e->dev.info.name, e->dev.info.max_work_group, idx->block_size);
        goto fail;
    }
    cl_int err;
    e->ctx = clCreateContext(NULL, 1, &e->dev.device, NULL, NULL, &err);
    if (!e->ctx || err != CL_SUCCESS) {
        s = clx_fail("clCreateContext", err);
        goto fail;
    }
    e->queue = clCreateCommandQueue(e->ctx, e->dev.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!e->queue || err != CL_SUCCESS) {
        s = clx_fail("clCreateCommandQueue", err);
        goto fail;
    }
    int cdiv = clx_correct_div(e->dev.device);
    /* Two programs: the decoder depends on the index (codec, block size, pfor depth), the
     * query kernels only on the device's parameters, so each caches on its own and a new
     * codec costs only the small decode build. */
    char dopts[256], qopts[512], dnote[4400], qnote[4400];
    static const char *const dec_files[] = {"decode.cl", NULL};
    static const char *const query_files[] = {"intersect.cl", "score.cl", "topk.cl", NULL};
    snprintf(dopts, sizeof dopts, "-cl-std=CL1.2 -DBLOCK_SIZE=%u -DCODEC=%d -DPFOR_DEPTH=%u -DWG_SCAN_ALGO=%u",
             idx->block_size, (int)idx->codec, idx->pfor_depth, e->prm.wg_scan_algo);
    snprintf(qopts, sizeof qopts, "-cl-std=CL1.2 -DWG_INTERSECT=%u -DWG_SCORE=%u -DWG_TOPK=%u -DWG_SCAN_ALGO=%u%s",
             e->prm.wg_intersect, e->prm.wg_score, e->prm.wg_topk, e->prm.wg_scan_algo,
             cdiv ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    double qsecs = 0;
    int qcache = 0;
    s = clx_build(e->ctx, &e->dev, dec_files, dopts, &e->prog_dec, &e->build_secs, &e->from_cache, dnote, sizeof dnote);
    if (s != CLS_OK) goto fail;
    s = clx_build(e->ctx, &e->dev, query_files, qopts, &e->prog, &qsecs, &qcache, qnote, sizeof qnote);
    if (s != CLS_OK) goto fail;
    e->build_secs += qsecs;
    e->from_cache = e->from_cache && qcache;
    if ((s = make_kernel(e->prog_dec, "decode_blocks", &e->k_decode)) != CLS_OK ||
        (s = make_kernel(e->prog, "intersect_and", &e->k_intersect)) != CLS_OK ||
        (s = make_kernel(e->prog, "score_and", &e->k_score_and)) != CLS_OK ||
        (s = make_kernel(e->prog, "score_or", &e->k_score_or)) != CLS_OK ||
        (s = make_kernel(e->prog, "topk_select", &e->k_topk)) != CLS_OK)
        goto fail;

    /* The index goes up once; the per-batch buffers share what is left of a budget. */
    size_t wbytes = (size_t)idx->num_words * 4, bbytes = (size_t)idx->num_blocks * sizeof(idx_block);
    e->d_words = wbytes ? clCreateBuffer(e->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, wbytes, (void *)idx->words, &err)
                        : clCreateBuffer(e->ctx, CL_MEM_READ_ONLY, MIN_BUF, NULL, &err);
    if (!e->d_words || err != CL_SUCCESS) {
        s = err_wrap(clx_fail("clCreateBuffer", err), "uploading the postings (%zu bytes): ", wbytes);
        goto fail;
    }
    e->d_blocks = bbytes ? clCreateBuffer(e->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bbytes, (void *)idx->blocks, &err)
                         : clCreateBuffer(e->ctx, CL_MEM_READ_ONLY, MIN_BUF, NULL, &err);
    if (!e->d_blocks || err != CL_SUCCESS) {
        s = err_wrap(clx_fail("clCreateBuffer", err), "uploading the block metadata: ");
        goto fail;
    }
    size_t nbytes = ((size_t)idx->num_docs + 1) * sizeof(float);
    e->d_norms = clCreateBuffer(e->ctx, CL_MEM_READ_ONLY, nbytes, NULL, &err);
    e->h_norms = malloc(nbytes);
    e->slot = calloc((size_t)idx->num_terms + 1, sizeof *e->slot);
    e->touched = malloc(((size_t)idx->num_terms + 1) * sizeof *e->touched);
    if (!e->d_norms || err != CL_SUCCESS) {
        s = clx_fail("clCreateBuffer", err);
        goto fail;
    }
    if (!e->h_norms || !e->slot || !e->touched) {
        s = err_set(CLS_E_NOMEM, "out of memory");
        goto fail;
    }
    uint64_t gm = e->dev.info.global_mem;
    uint64_t fixed = wbytes + bbytes + nbytes;
    e->budget = gm > fixed ? (size_t)((gm - fixed) / 2) : 0; /* leave room for the driver and others */

    snprintf(desc, desc_len,
             "device: %u:%u %s (%s, %s; driver %s; %s; %u compute units, %.1f GiB) chosen: %s\n"
             "kernels: decode=%s block-per-workgroup %s scan (WG %u), intersect=workgroup-per-query "
             "binary search (WG %u), score=and:binary-search or:dense-accumulator (WG %u), "
             "topk=radix-select+bitonic (WG %u); parameters from %s; division %s\n"
             "programs: decode (%s) %s; query (%s) %s",
             e->dev.info.platform, e->dev.info.device, e->dev.info.name, e->dev.info.platform_name,
             e->dev.info.platform_version, e->dev.info.driver_version, e->dev.info.opencl_c_version,
             e->dev.info.compute_units, (double)gm / (1u << 30), e->dev.reason, cls_codec_name(idx->codec), clx_scan_algo_name(e->prm.wg_scan_algo), idx->block_size,
             e->prm.wg_intersect, e->prm.wg_score, e->prm.wg_topk, e->prm.source,
             cdiv ? "correctly rounded" : "NOT correctly rounded (scores may differ from ref in the last bit)", dopts, dnote,
             qopts, qnote);
    *out = e;
    return CLS_OK;
fail:
    clx_free(e);
    return s;
}

void clx_free(clx_engine *e)
{
    if (!e) return;
    dbuf *bufs[] = {&e->in, &e->docs, &e->freqs, &e->cand, &e->cscore, &e->ncand, &e->acc, &e->sdoc, &e->sscore, &e->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]->mem) clReleaseMemObject(bufs[i]->mem);
    cl_mem mems[] = {e->d_words, e->d_blocks, e->d_norms};
    for (size_t i = 0; i < 3; i++)
        if (mems[i]) clReleaseMemObject(mems[i]);
    cl_kernel ks[] = {e->k_decode, e->k_intersect, e->k_score_and, e->k_score_or, e->k_topk};
    for (size_t i = 0; i < 5; i++)
        if (ks[i]) clReleaseKernel(ks[i]);
    if (e->prog) clReleaseProgram(e->prog);
    if (e->prog_dec) clReleaseProgram(e->prog_dec);
    if (e->queue) clReleaseCommandQueue(e->queue);
    if (e->ctx) clReleaseContext(e->ctx);
    free(e->h_in);
    free(e->h_out);
    free(e->h_norms);
    free(e->slot);
    free(e->touched);
    free(e);
}

void clx_build_times(const clx_engine *e, double *seconds, int *from_cache)
{
    *seconds = e->build_secs;
    *from_cache = e->from_cache;
}

/* Sets kernel arguments in order; each entry a (size, pointer) pair. */
#define ARG(k, i, v)                                                                             \
    do {                                                                                         \
        cl_int a_ = clSetKernelArg(k, i, sizeof(v), &(v));                                       \
        if (a_ != CL_SUCCESS) return err_wrap(clx_fail("clSetKernelArg", a_), "%s arg %d: ", #k, i); \
    } while (0)

static cls_status launch(clx_engine *e, cl_kernel k, const char *name, size_t groups, size_t wg, cl_event *ev)
{
    if (groups == 0) return CLS_OK;
    size_t global = groups * wg;
    cl_int err = clEnqueueNDRangeKernel(e->queue, k, 1, NULL, &global, &wg, 0, NULL, ev);
    if (err != CL_SUCCESS) return err_wrap(clx_fail("clEnqueueNDRangeKernel", err), "kernel %s: ", name);
    return CLS_OK;
}

static uint32_t next_pow2(uint32_t x)
{
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

/* The arguments intersect_and, score_and and score_or share: the batch input, where its query
 * descriptors start, and the decoded lists (docIDs; frequencies and norms too when scoring). */
static cls_status query_args(clx_engine *e, cl_kernel k, uint32_t qinfo_base, uint32_t qterm_base, int scoring)
{
    ARG(k, 0, e->in.mem);
    ARG(k, 1, qinfo_base);
    ARG(k, 2, qterm_base);
    ARG(k, 3, e->docs.mem);
    if (scoring) {
        ARG(k, 4, e->freqs.mem);
        ARG(k, 5, e->d_norms);
    }
    return CLS_OK;
}

/* decode_blocks over ntasks (block, destination) pairs at tasks[task_base..]. */
static cls_status enqueue_decode(clx_engine *e, cl_mem words, cl_mem blocks, cl_mem tasks, uint32_t task_base,
                                 size_t ntasks, cl_event *ev)
{
    cl_kernel k = e->k_decode;
    ARG(k, 0, words);
    ARG(k, 1, blocks);
    ARG(k, 2, tasks);
    ARG(k, 3, task_base);
    ARG(k, 4, e->docs.mem);
    ARG(k, 5, e->freqs.mem);
    return launch(e, k, "decode_blocks", ntasks, e->idx->block_size, ev);
}

/* topk_select for nq queries into e->out; dense: scores are rows of num_docs. */
static cls_status enqueue_topk(clx_engine *e, cl_mem scores, cl_mem cdocs, uint32_t qinfo_base, uint32_t dense,
                               uint32_t num_docs, uint32_t kk, uint32_t P, uint32_t nq, cl_event *ev)
{
    cl_kernel k = e->k_topk;
    ARG(k, 0, scores);
    ARG(k, 1, cdocs);
    ARG(k, 2, e->in.mem);
    ARG(k, 3, qinfo_base);
    ARG(k, 4, e->ncand.mem);
    ARG(k, 5, dense);
    ARG(k, 6, num_docs);
    ARG(k, 7, kk);
    ARG(k, 8, P);
    ARG(k, 9, nq);
    ARG(k, 10, e->sdoc.mem);
    ARG(k, 11, e->sscore.mem);
    ARG(k, 12, e->out.mem);
    return launch(e, k, "topk_select", nq, e->prm.wg_topk, ev);
}

/* Adds each finished step's device time to the profile and releases the events. */
static void profile_collect(clx_engine *e, int ok)
{
    static const size_t slot[EV_COUNT] = {
        offsetof(cls_profile, upload_s), offsetof(cls_profile, decode_s), offsetof(cls_profile, intersect_s),
        offsetof(cls_profile, score_s), offsetof(cls_profile, topk_s), offsetof(cls_profile, download_s)};
    for (int i = 0; i < EV_COUNT; i++) {
        if (!e->ev[i]) continue;
        if (ok) *(double *)((char *)&e->prof + slot[i]) += clx_event_span(e->ev[i], e->ev[i]);
        clReleaseEvent(e->ev[i]);
        e->ev[i] = NULL;
    }
}

/* One batch of queries [q0, q0+nq): plan, upload, run, read back into r. */
static cls_status run_batch_steps(clx_engine *e, const cls_batch *bt, uint64_t q0, uint32_t nq, uint32_t ntasks,
                            uint32_t nqterms, const cls_search_params *p, uint32_t kk, cls_results *r)
{
    const cls_index *idx = e->idx;
    uint32_t N = idx->num_docs;
    int and_mode = p->mode == CLS_MODE_AND;
    uint32_t P = next_pow2(kk);
    /* input layout: tasks (2 per block) | qinfo (4 per query) | qterm (4 per term) */
    uint32_t task_base = 0, qinfo_base = 2 * ntasks, qterm_base = qinfo_base + 4 * nq;
    size_t in_len = (size_t)qterm_base + 4 * (size_t)nqterms;
    if (!host_need((void **)&e->h_in, &e->h_in_cap, in_len, sizeof *e->h_in))
        return err_set(CLS_E_NOMEM, "out of memory for the batch plan");
    abi_task *tasks = (abi_task *)(e->h_in + task_base);
    abi_query *qinfo = (abi_query *)(e->h_in + qinfo_base);
    abi_term *qterm = (abi_term *)(e->h_in + qterm_base);
    uint32_t nt_used = 0, ntouched = 0, tpos = 0;
    uint64_t dec = 0, cand_off = 0;
    for (uint32_t i = 0; i < nq; i++) {
        const batch_query *q = &bt->q[q0 + i];
        const batch_term *t = bt->terms + q->term_start;
        int empty = q->num_terms == 0 || (and_mode && q->unknown > 0);
        uint32_t shortest = UINT32_MAX;
        qinfo[i].term_start = nt_used;
        qinfo[i].num_terms = empty ? 0 : q->num_terms;
        qinfo[i].flags = empty ? ABI_QF_EMPTY : 0u;
        for (uint32_t j = 0; j < q->num_terms && !empty; j++) {
            const idx_term *te = &idx->terms[t[j].term];
            if (e->slot[t[j].term] == 0) { /* first use in this batch: decode its blocks */
                e->slot[t[j].term] = (uint32_t)dec + 1;
                e->touched[ntouched++] = t[j].term;
                for (uint32_t b = 0; b < te->num_blocks; b++) {
                    tasks[tpos].block = te->first_block + b;
                    tasks[tpos].dst = (uint32_t)dec + b * e->idx->block_size;
                    tpos++;
                }
                dec += (uint64_t)te->num_blocks * e->idx->block_size;
            }
            qterm[nt_used] = (abi_term){.list_offset = e->slot[t[j].term] - 1, .df = te->df,
                                        .weight = bm25_weight(idx, t[j].term, t[j].qtf)};
            nt_used++;
            if (te->df < shortest) shortest = te->df;
        }
        qinfo[i].cand_offset = (uint32_t)cand_off;
        if (and_mode && !empty) cand_off += shortest;
    }
    for (uint32_t i = 0; i < ntouched; i++) e->slot[e->touched[i]] = 0;

    size_t out_len = (size_t)nq + 2 * (size_t)nq * kk;
    cls_status s;
    if ((s = dbuf_need(e, &e->in, in_len * 4, "the batch input")) != CLS_OK ||
        (s = dbuf_need(e, &e->docs, (size_t)dec * 4, "decoded docIDs")) != CLS_OK ||
        (s = dbuf_need(e, &e->freqs, (size_t)dec * 4, "decoded frequencies")) != CLS_OK ||
        (s = dbuf_need(e, &e->ncand, (size_t)nq * 4, "candidate counts")) != CLS_OK ||
        (s = dbuf_need(e, &e->sdoc, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dbuf_need(e, &e->sscore, (size_t)nq * P * 4, "top-k scratch")) != CLS_OK ||
        (s = dbuf_need(e, &e->out, out_len * 4, "results")) != CLS_OK)
        return s;
    if (and_mode) {
        if ((s = dbuf_need(e, &e->cand, (size_t)cand_off * 4, "AND candidates")) != CLS_OK ||
            (s = dbuf_need(e, &e->cscore, (size_t)cand_off * 4, "candidate scores")) != CLS_OK)
            return s;
    } else if ((s = dbuf_need(e, &e->acc, (size_t)nq * N * 4, "OR accumulators")) != CLS_OK ||
               (s = dbuf_need(e, &e->cand, 4, "placeholder")) != CLS_OK) {
        return s;
    }
    if (!host_need((void **)&e->h_out, &e->h_out_cap, out_len, sizeof *e->h_out))
        return err_set(CLS_E_NOMEM, "out of memory for results");

    CLX_TRY(clEnqueueWriteBuffer(e->queue, e->in.mem, CL_FALSE, 0, in_len * 4, e->h_in, 0, NULL, &e->ev[EV_UP]));
    e->prof.bytes_up += in_len * 4;
    if ((s = enqueue_decode(e, e->d_words, e->d_blocks, e->in.mem, task_base, tpos, &e->ev[EV_DECODE])) != CLS_OK)
        return s;
    cl_kernel k;

    cl_mem scores, cdocs;
    uint32_t dense = and_mode ? 0 : 1;
    if (and_mode) {
        k = e->k_intersect;
        if ((s = query_args(e, k, qinfo_base, qterm_base, 0)) != CLS_OK) return s;
        ARG(k, 4, e->cand.mem);
        ARG(k, 5, e->ncand.mem);
        if ((s = launch(e, k, "intersect_and", nq, e->prm.wg_intersect, &e->ev[EV_INTERSECT])) != CLS_OK) return s;
        k = e->k_score_and;
        if ((s = query_args(e, k, qinfo_base, qterm_base, 1)) != CLS_OK) return s;
        ARG(k, 6, e->cand.mem);
        ARG(k, 7, e->ncand.mem);
        ARG(k, 8, e->cscore.mem);
        if ((s = launch(e, k, "score_and", nq, e->prm.wg_score, &e->ev[EV_SCORE])) != CLS_OK) return s;
        scores = e->cscore.mem;
    } else {
        k = e->k_score_or;
        if ((s = query_args(e, k, qinfo_base, qterm_base, 1)) != CLS_OK) return s;
        ARG(k, 6, N);
        ARG(k, 7, e->acc.mem);
        if ((s = launch(e, k, "score_or", nq, e->prm.wg_score, &e->ev[EV_SCORE])) != CLS_OK) return s;
        scores = e->acc.mem;
    }
    cdocs = e->cand.mem; /* unused by top-k in dense (OR) mode */
    if ((s = enqueue_topk(e, scores, cdocs, qinfo_base, dense, N, kk, P, nq, &e->ev[EV_TOPK])) != CLS_OK) return s;
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, &e->ev[EV_DOWN]));
    e->prof.bytes_down += out_len * 4;

    for (uint32_t i = 0; i < nq; i++) {
        uint32_t m = e->h_out[i];
        if (m > kk) return err_set(CLS_E_OPENCL, "topk_select returned %u hits for k = %u", m, kk);
        uint64_t at = r->start[q0 + i];
        memcpy(r->docs + at, e->h_out + ABI_OUT_DOC((size_t)nq, kk, i, 0), (size_t)m * 4);
        memcpy(r->scores + at, e->h_out + ABI_OUT_SCORE((size_t)nq, kk, i, 0), (size_t)m * 4);
        r->start[q0 + i + 1] = at + m;
    }
    return CLS_OK;
}

static cls_status run_batch(clx_engine *e, const cls_batch *bt, uint64_t q0, uint32_t nq, uint32_t ntasks,
                            uint32_t nqterms, const cls_search_params *p, uint32_t kk, cls_results *r)
{
    cls_status s = run_batch_steps(e, bt, q0, nq, ntasks, nqterms, p, kk, r);
    profile_collect(e, s == CLS_OK);
    e->prof.batches++;
    return s;
}

void clx_profile(const clx_engine *e, cls_profile *p) { *p = e->prof; }

cls_status clx_search(clx_engine *e, const cls_batch *bt, const cls_search_params *p, cls_results *r)
{
    memset(&e->prof, 0, sizeof e->prof);
    const cls_index *idx = e->idx;
    uint32_t N = idx->num_docs;
    uint32_t kk = p->k < N ? p->k : (N ? N : 1);
    cls_status s = results_reset(r, bt->nq, bt->nq * (uint64_t)kk);
    if (s != CLS_OK) return s;
    if (bt->nq == 0) return CLS_OK;
    if (e->norm_k1 != p->k1 || e->norm_b != p->b) {
        bm25_norms(idx, p->k1, p->b, e->h_norms);
        cl_int err = clEnqueueWriteBuffer(e->queue, e->d_norms, CL_TRUE, 0, (size_t)N * 4 + (N ? 0 : 4), e->h_norms, 0,
                                          NULL, &e->ev[EV_UP]);
        profile_collect(e, err == CL_SUCCESS);
        if (err != CL_SUCCESS) return clx_fail("clEnqueueWriteBuffer(norms)", err);
        e->prof.bytes_up += (size_t)N * 4;
        e->norm_k1 = p->k1;
        e->norm_b = p->b;
    }
    int and_mode = p->mode == CLS_MODE_AND;
    uint32_t P = next_pow2(kk);
    /* Fixed bytes per query (results, top-k scratch, accumulator row) bound the batch size. */
    size_t per_query = (size_t)kk * 8 + (size_t)P * 8 + 32 + (and_mode ? 0 : (size_t)N * 4);
    size_t max_alloc = e->dev.info.max_alloc;
    uint64_t q0 = 0;
    while (q0 < bt->nq) {
        /* Grow the batch while its buffers fit the budget (dedup across queries is not
         * counted here, so the estimate errs on the safe side). */
        uint32_t nq = 0, ntasks = 0, nqterms = 0;
        uint64_t ndec = 0;
        size_t bytes = 0;
        while (q0 + nq < bt->nq && nq < CLX_MAX_BATCH) {
            const batch_query *q = &bt->q[q0 + nq];
            uint64_t qdec = 0, qshort = UINT32_MAX;
            uint32_t qtasks = 0;
            for (uint32_t j = 0; j < q->num_terms; j++) {
                const idx_term *te = &idx->terms[bt->terms[q->term_start + j].term];
                qtasks += te->num_blocks;
                qdec += (uint64_t)te->num_blocks * e->idx->block_size;
                if (te->df < qshort) qshort = te->df;
            }
            if (q->num_terms == 0) qshort = 0;
            size_t qbytes = per_query + (size_t)qdec * 8 + (size_t)qtasks * 8 + (size_t)q->num_terms * 16 +
                            (and_mode ? (size_t)qshort * 8 : 0);
            uint64_t nd = ndec + qdec, nacc = (uint64_t)(nq + 1) * N * 4;
            if (nq > 0 && (bytes + qbytes > e->budget || nd * 4 > max_alloc || nacc > max_alloc ||
                           (uint64_t)(nq + 1) * P * 4 > max_alloc || nd >= UINT32_MAX))
                break;
            bytes += qbytes;
            ndec = nd;
            ntasks += qtasks;
            nqterms += q->num_terms;
            nq++;
        }
        if (ndec >= UINT32_MAX)
            return err_set(CLS_E_DEVMEM, "query %s decodes more than 2^32 postings", cls_batch_qid(bt, (size_t)q0));
        s = run_batch(e, bt, q0, nq, ntasks, nqterms, p, kk, r);
        if (s != CLS_OK) return s;
        q0 += nq;
    }
    r->total = r->start[bt->nq];
    return CLS_OK;
}

/* ---- Test hooks -------------------------------------------------------------------------- */

static cls_status upload(clx_engine *e, dbuf *b, const void *data, size_t bytes, const char *what)
{
    cls_status s = dbuf_need(e, b, bytes, what);
    if (s == CLS_OK && bytes) CLX_TRY(clEnqueueWriteBuffer(e->queue, b->mem, CL_TRUE, 0, bytes, data, 0, NULL, NULL));
    return s;
}

cls_status clx_test_decode(clx_engine *e, const uint32_t *words, uint64_t nwords, const idx_block *blocks,
                           uint32_t n, uint32_t *docs, uint32_t *freqs)
{
    dbuf w = {0}, bl = {0}, tk = {0};
    uint32_t *tasks = malloc(((size_t)n * 2 + 1) * 4);
    if (!tasks) return err_set(CLS_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) ((abi_task *)tasks)[i] = (abi_task){.block = i, .dst = i * e->idx->block_size};
    size_t outb = (size_t)n * e->idx->block_size * 4;
    uint32_t zero = 0;
    cls_status s;
    if ((s = upload(e, &w, words, (size_t)nwords * 4 + 4, "words")) == CLS_OK &&
        (s = upload(e, &bl, blocks, (size_t)n * sizeof *blocks, "blocks")) == CLS_OK &&
        (s = upload(e, &tk, tasks, (size_t)n * 8, "tasks")) == CLS_OK &&
        (s = dbuf_need(e, &e->docs, outb, "docs")) == CLS_OK && (s = dbuf_need(e, &e->freqs, outb, "freqs")) == CLS_OK) {
        s = enqueue_decode(e, w.mem, bl.mem, tk.mem, zero, n, NULL);
        cl_int r1 = CL_SUCCESS, r2 = CL_SUCCESS;
        if (s == CLS_OK && outb) {
            r1 = clEnqueueReadBuffer(e->queue, e->docs.mem, CL_TRUE, 0, outb, docs, 0, NULL, NULL);
            r2 = clEnqueueReadBuffer(e->queue, e->freqs.mem, CL_TRUE, 0, outb, freqs, 0, NULL, NULL);
        }
        if (s == CLS_OK && (r1 != CL_SUCCESS || r2 != CL_SUCCESS)) s = clx_fail("clEnqueueReadBuffer", r1 ? r1 : r2);
    }
    dbuf *all[] = {&w, &bl, &tk};
    for (int i = 0; i < 3; i++)
        if (all[i]->mem) clReleaseMemObject(all[i]->mem);
    free(tasks);
    return s;
}

/* The buffers topk_select needs for nq dense rows of N scores at k (scores not written):
 * empty query descriptors, candidate counts, scratch and output. */
static cls_status topk_buffers(clx_engine *e, uint32_t nq, uint32_t N, uint32_t k, uint32_t P, size_t out_len)
{
    uint32_t *qinfo = calloc((size_t)nq * 4 + 1, 4);
    if (!qinfo || !host_need((void **)&e->h_out, &e->h_out_cap, out_len, 4)) {
        free(qinfo);
        return err_set(CLS_E_NOMEM, "out of memory");
    }
    cls_status s;
    if ((s = dbuf_need(e, &e->acc, (size_t)nq * N * 4, "scores")) != CLS_OK ||
        (s = upload(e, &e->in, qinfo, (size_t)nq * 16 + 4, "qinfo")) != CLS_OK ||
        (s = dbuf_need(e, &e->ncand, (size_t)nq * 4, "ncand")) != CLS_OK ||
        (s = dbuf_need(e, &e->cand, 4, "cand")) != CLS_OK ||
        (s = dbuf_need(e, &e->sdoc, (size_t)nq * P * 4, "scratch")) != CLS_OK ||
        (s = dbuf_need(e, &e->sscore, (size_t)nq * P * 4, "scratch")) != CLS_OK ||
        (s = dbuf_need(e, &e->out, out_len * 4, "out")) != CLS_OK) {
        free(qinfo);
        return s;
    }
    free(qinfo);
    return CLS_OK;
}

cls_status clx_test_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k,
                         uint32_t *counts, uint32_t *docs, float *out_scores)
{
    uint32_t P = next_pow2(k), dense = 1, qinfo_base = 0;
    size_t out_len = (size_t)nq + 2 * (size_t)nq * k;
    cls_status s = topk_buffers(e, nq, N, k, P, out_len);
    if (s == CLS_OK) s = upload(e, &e->acc, scores, (size_t)nq * N * 4, "scores");
    if (s != CLS_OK) return s;
    if ((s = enqueue_topk(e, e->acc.mem, e->cand.mem, qinfo_base, dense, N, k, P, nq, NULL)) != CLS_OK) return s;
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL));
    memcpy(counts, e->h_out, (size_t)nq * 4);
    memcpy(docs, e->h_out + nq, (size_t)nq * k * 4);
    memcpy(out_scores, e->h_out + nq + (size_t)nq * k, (size_t)nq * k * 4);
    return CLS_OK;
}

/* ---- Benchmark hook --------------------------------------------------------------------- */


cls_status clx_bench_decode(clx_engine *e, const uint32_t *sel, uint64_t b0, uint32_t nb, unsigned reps,
                            double *kernel_s, double *upload_s)
{
    const cls_index *x = e->idx;
    if (!sel && (b0 > x->num_blocks || nb > x->num_blocks - b0)) return err_set(CLS_E_ARG, "block range out of the index");
    for (uint32_t i = 0; sel && i < nb; i++)
        if (sel[i] >= x->num_blocks) return err_set(CLS_E_ARG, "block %u out of the index", sel[i]);
    uint32_t B = x->block_size;
    cl_event ev = NULL;
    *upload_s = 0;
    /* the index upload, timed: words and block metadata, as clx_create sends them */
    size_t wbytes = (size_t)x->num_words * 4, bbytes = (size_t)x->num_blocks * sizeof(idx_block);
    if (wbytes) {
        CLX_TRY(clEnqueueWriteBuffer(e->queue, e->d_words, CL_TRUE, 0, wbytes, x->words, 0, NULL, &ev));
        *upload_s += clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    if (bbytes) {
        CLX_TRY(clEnqueueWriteBuffer(e->queue, e->d_blocks, CL_TRUE, 0, bbytes, x->blocks, 0, NULL, &ev));
        *upload_s += clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    uint32_t *tasks = malloc(((size_t)nb * 2 + 1) * 4);
    if (!tasks) return err_set(CLS_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < nb; i++) ((abi_task *)tasks)[i] = (abi_task){.block = sel ? sel[i] : (uint32_t)(b0 + i), .dst = i * B};
    dbuf tk = {0};
    size_t outb = (size_t)nb * B * 4;
    cls_status s;
    if ((s = upload(e, &tk, tasks, (size_t)nb * 8, "tasks")) == CLS_OK &&
        (s = dbuf_need(e, &e->docs, outb, "docs")) == CLS_OK && (s = dbuf_need(e, &e->freqs, outb, "freqs")) == CLS_OK) {
        for (unsigned r = 0; r <= reps && s == CLS_OK; r++) { /* r = 0: warm-up */
            s = enqueue_decode(e, e->d_words, e->d_blocks, tk.mem, 0, nb, &ev);
            if (s != CLS_OK) break;
            cl_int err = clWaitForEvents(1, &ev);
            if (err != CL_SUCCESS) s = clx_fail("clWaitForEvents", err);
            else if (r > 0) kernel_s[r - 1] = clx_event_span(ev, ev);
            clReleaseEvent(ev);
        }
    }
    if (tk.mem) clReleaseMemObject(tk.mem);
    free(tasks);
    return s;
}

cls_status clx_bench_decoded(clx_engine *e, uint32_t nb, uint32_t *docs, uint32_t *freqs)
{
    size_t outb = (size_t)nb * e->idx->block_size * 4;
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->docs.mem, CL_TRUE, 0, outb, docs, 0, NULL, NULL));
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->freqs.mem, CL_TRUE, 0, outb, freqs, 0, NULL, NULL));
    return CLS_OK;
}

cls_status clx_bench_topk(clx_engine *e, const float *scores, uint32_t nq, uint32_t N, uint32_t k, unsigned reps,
                          double *kernel_s, double *upload_s, uint32_t *docs0, float *scores0, uint32_t *count0)
{
    uint32_t P = next_pow2(k), dense = 1;
    size_t out_len = (size_t)nq + 2 * (size_t)nq * k;
    cls_status s = topk_buffers(e, nq, N, k, P, out_len);
    if (s != CLS_OK) return s;
    cl_event ev;
    CLX_TRY(clEnqueueWriteBuffer(e->queue, e->acc.mem, CL_TRUE, 0, (size_t)nq * N * 4, scores, 0, NULL, &ev));
    *upload_s = clx_event_span(ev, ev);
    clReleaseEvent(ev);
    for (unsigned r = 0; r <= reps; r++) { /* r = 0: warm-up */
        if ((s = enqueue_topk(e, e->acc.mem, e->cand.mem, 0, dense, N, k, P, nq, &ev)) != CLS_OK) return s;
        cl_int err = clWaitForEvents(1, &ev);
        if (err != CL_SUCCESS) {
            clReleaseEvent(ev);
            return clx_fail("clWaitForEvents", err);
        }
        if (r > 0) kernel_s[r - 1] = clx_event_span(ev, ev);
        clReleaseEvent(ev);
    }
    CLX_TRY(clEnqueueReadBuffer(e->queue, e->out.mem, CL_TRUE, 0, out_len * 4, e->h_out, 0, NULL, NULL));
    *count0 = e->h_out[0];
    memcpy(docs0, e->h_out + nq, (size_t)k * 4);
    memcpy(scores0, e->h_out + nq + (size_t)nq * k, (size_t)k * 4);
    return CLS_OK;
}

const clx_params *clx_engine_params(const clx_engine *e) { return &e->prm; }
