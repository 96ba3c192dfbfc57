/* The second ranking stage as a stage of the device executor's batches (dev_engine.h:
 * dev_rerank_*, the row "rerank" of dev_engine.c's stage table, after top-k). A search the
 * executor runs whole (clx_search) with a model ends each batch, on the engine's queue and with
 * no host round trip between the kernels, in: rerank_tf (each candidate's frequency of each query
 * term, found in the index's blocks on the device), features_rows (cl/features.cl: the rows in
 * cl/trees.cl's layout), trees_score (cl/trees.cl, through rank_dev_enqueue) and rerank_order
 * (the candidates by model score, the first k kept): cl/rerank.cl says how. The candidates never
 * leave the device; the batch's read brings back the final k hits of each query with both scores
 * (ABI_RR_*) in place of the candidates, and clx_search packs them as the scheduler's stage would
 * have left them (r->reranked), which then has nothing left to do (rerank.h).
 *
 * What the kernels read besides the batch's top-k output: per batch, each query's terms (what
 * needs double, computed on the host once per query term by the feature extractor as the host's
 * stage computes it: feat_query_terms), uploaded from pinned memory of the
 * batch's own flight so that the next batch may be planned while one runs; once per engine, at
 * its first reranked search, every document's length and numeric stored fields (the BM25 norms
 * are the engine's own, d_norms, at the search's k1 and b). The rows are made a chunk of the
 * batch's queries at a time (RERANK_CHUNK_ROWS rows at most, a query never cut), so the buffers
 * stay bounded whatever the batch; every buffer only grows.
 *
 * Results are the host stage's bit for bit: the frequencies are the list's, the features the
 * table's float arithmetic (the twins' rule, cl/features.cl), the trees' sum the plain-C
 * evaluator's, the order rerank.c's. Where that cannot hold the stage stays on the host
 * (rerank_run in plain C), and the engine's -v line says why (dev_rerank_explain): a device that
 * does not round division correctly (a feature could differ in its last bit), or lists cached on
 * the device rather than resident (the blocks of a term are then wherever the cache put them);
 * and, without a word in -v, a device that cannot hold the documents' lengths and fields (the
 * search's counters say where it ran: rerank_queries_host). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "engine/dev_engine.h"
#include "engine/rerank.h"
#include "index/bm25.h"
#include "index/index.h"
#include "query/batch.h"
#include "rank/features.h"
#include "rank/rank_dev.h"
#include "util/err.h"
#include "util/vec.h"

/* Rows (candidate slots) made at most a chunk: bounds the rows', scores' and frequencies'
 * buffers (a chunk of one query takes its kk slots whatever the bound). */
#define RERANK_CHUNK_ROWS ((uint64_t)1 << 18)
/* rerank_order's work-group (cl/rerank.cl: WG_RERANK), halved to what the device allows */
#define RERANK_WG 128u
/* features_rows' work-group (cl/features.cl: WG_FEATURES) */
#define RERANK_WG_FEATURES 64u

struct dev_rerank {
    feat_extractor *fx;
    rank_dev rd;
    cl_program prog;      /* the codec's fragment, decode.cl, features.cl and rerank.cl */
    unsigned wg_order;    /* WG_RERANK */
    uint32_t width, nfields;
    cl_mem doclen, fields; /* every document's length and numeric stored fields, on the device */
    dbuf queries, terms, tf, rows, model, res;
    dev_pinned up[2];     /* a flight's queries and terms (dev_engine.h: e->flight) */
    feat_term *fterms;    /* one query's terms from the extractor */
    size_t fterms_cap;
    uint32_t t_count[2];  /* terms of each flight's batch */
    float mu, lambda;     /* the features' smoothing (the extractor's defaults) */
    uint32_t absent_bits; /* the search's model's absent value */
};

void dev_rerank_free(dev_rerank *rr)
{
    if (!rr) return;
    feat_free(rr->fx);
    dbuf *bufs[] = {&rr->queries, &rr->terms, &rr->tf, &rr->rows, &rr->model, &rr->res};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) dev_buf_release(bufs[i]);
    for (unsigned i = 0; i < 2 && rr->rd.dc; i++) dev_pinned_release(rr->rd.dc, &rr->up[i]); /* the engine's device */
    if (rr->doclen) clReleaseMemObject(rr->doclen);
    if (rr->fields) clReleaseMemObject(rr->fields);
    if (rr->prog) clReleaseProgram(rr->prog);
    rank_dev_close(&rr->rd);
    free(rr->fterms);
    free(rr);
}

/* Why the stage cannot run in e's batches (NULL: it can). */
static const char *host_only(const clx_engine *e, int cdiv)
{
    if (!cdiv) return "the device does not round division correctly (a feature could differ in its last bit)";
    if (e->cached) return "the lists are cached on the device, not resident";
    return NULL;
}

const char *dev_rerank_explain(const clx_engine *e, int cdiv)
{
    const char *why = host_only(e, cdiv);
    return why ? why : "in each batch after top-k (rerank_tf, features_rows, trees_score, rerank_order), the final k read";
}

/* A device copy of host data, blocking. */
static cls_status upload_once(clx_engine *e, const void *data, size_t bytes, const char *what, cl_mem *out)
{
    cl_int err;
    *out = dev_create_buffer(e->dc.ctx, CL_MEM_READ_ONLY, bytes > DEV_MIN_BUF ? bytes : DEV_MIN_BUF, NULL, &err);
    if (!*out || err != CL_SUCCESS) {
        *out = NULL;
        return err_wrap(clx_fail("clCreateBuffer", err), "the second ranking stage's %s (%zu bytes): ", what, bytes);
    }
    cl_event ev;
    if (bytes && (err = clEnqueueWriteBuffer(e->dc.queue, *out, CL_TRUE, 0, bytes, data, 0, NULL, &ev)) != CL_SUCCESS)
        return err_wrap(clx_fail("clEnqueueWriteBuffer", err), "the second ranking stage's %s: ", what);
    return bytes ? dev_record(&e->dc, ev, "upload", bytes) : CLS_OK;
}

/* The extractor, the programs and the documents' lengths and fields on e's device, at its first
 * reranked search. */
static cls_status dev_rerank_open(clx_engine *e)
{
    if (e->rerank) return CLS_OK;
    const cls_index *idx = e->idx;
    dev_rerank *rr = calloc(1, sizeof *rr);
    if (!rr) return err_set(CLS_E_NOMEM, "the second ranking stage on the device: out of memory");
    feat_params fp;
    feat_params_default(&fp);
    rr->mu = fp.mu;
    rr->lambda = fp.lambda;
    cls_status s = feat_create(idx, &fp, &rr->fx);
    if (s == CLS_OK) s = rank_dev_open_on(&rr->rd, &e->dc, NULL);
    if (s == CLS_OK) {
        rr->width = feat_count(rr->fx);
        rr->nfields = rr->width - FEAT_FIXED;
        rr->wg_order = RERANK_WG;
        while (rr->wg_order > e->dc.dev.info.max_work_group && rr->wg_order > 1) rr->wg_order /= 2;
        char opts[sizeof e->dopts + 64], note[4400];
        snprintf(opts, sizeof opts, "%s -DWG_FEATURES=%u -DWG_RERANK=%u", e->dopts, RERANK_WG_FEATURES,
                 rr->wg_order);
        const char *const files[] = {cdc_kernel_file(idx->codec), "decode.cl", "features.cl", "rerank.cl", NULL};
        s = dev_build(&e->dc, files, opts, &rr->prog, note, sizeof note);
        const char *const kernels[] = {"rerank_tf", "features_rows", "rerank_order"};
        for (size_t i = 0; i < 3 && s == CLS_OK; i++) s = dev_need_kernel(&e->dc, rr->prog, kernels[i]);
    }
    /* the documents' lengths and fields: the rows read them by docID */
    const size_t N = idx->num_docs, fbytes = N * rr->nfields * sizeof(float);
    if (s == CLS_OK && rr->nfields && (N > SIZE_MAX / sizeof(float) / rr->nfields || fbytes > e->dc.dev.info.max_alloc))
        s = err_set(CLS_E_DEVMEM, "the second ranking stage: %u stored fields of %zu documents exceed one device "
                    "buffer", rr->nfields, N);
    if (s == CLS_OK) s = upload_once(e, idx->doclen, N * sizeof(uint32_t), "document lengths", &rr->doclen);
    if (s == CLS_OK && rr->nfields) {
        float *h = malloc(fbytes ? fbytes : 1);
        if (!h) s = err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %zu documents' fields", N);
        for (size_t d = 0; s == CLS_OK && d < N; d++) feat_doc_fields(rr->fx, (uint32_t)d, h + d * rr->nfields);
        if (s == CLS_OK) s = idx_intact(idx, CLS_OK);
        if (s == CLS_OK) s = upload_once(e, h, fbytes, "stored fields", &rr->fields);
        free(h);
    } else if (s == CLS_OK) {
        s = upload_once(e, NULL, 0, "stored fields", &rr->fields); /* a buffer for the argument */
    }
    if (s == CLS_OK) dev_profile_collect(&e->dc, 1);
    if (s != CLS_OK) {
        clFinish(e->dc.queue);
        dev_profile_collect(&e->dc, 0);
        dev_rerank_free(rr);
        return err_wrap(s, "the second ranking stage on the device: ");
    }
    e->rerank = rr;
    return CLS_OK;
}

cls_status dev_rerank_begin(clx_engine *e, const cls_batch *b, const cls_search_params *p, int *on)
{
    dev_search *sr = &e->search;
    *on = 0;
    sr->rerank_k = 0;
    sr->rerank_batch = NULL;
    if (!p->rerank || e->rerank_off || host_only(e, clx_correct_div(e->dc.dev.device))) return CLS_OK;
    cls_status s = dev_rerank_open(e);
    if (s == CLS_E_DEVMEM) { /* the documents' data does not fit: the host's stage, from now on */
        e->rerank_off = 1;
        return CLS_OK;
    }
    if (s != CLS_OK) return s;
    dev_rerank *rr = e->rerank;
    const rank_model *m = &p->rerank->m;
    if (m->num_features > rr->width + 1)
        return err_set(CLS_E_ARG, "rerank model reads feature %u, the index's table has %u", m->num_features - 1,
                       rr->width);
    feat_params fp;
    feat_params_default(&fp);
    fp.k1 = p->k1;
    fp.b = p->b;
    if ((s = feat_set_params(rr->fx, &fp)) != CLS_OK || (s = rank_dev_load(&rr->rd, m)) != CLS_OK) return s;
    memcpy(&rr->absent_bits, &m->absent, sizeof rr->absent_bits);
    /* the executors' copy of the search carries the hits the stage keeps in rerank_depth (its k is
     * the depth: scheduler.c); never more than the first stage keeps */
    const uint32_t kk = sr->kk;
    sr->rerank_k = p->rerank_depth && p->rerank_depth < kk ? p->rerank_depth : kk;
    sr->rerank_batch = b;
    *on = 1;
    return CLS_OK;
}

/* The end q1 of the chunk of a batch's nq queries that starts at q0: whole queries, at least one. */
static uint32_t chunk_end(const clx_engine *e, uint32_t nq, uint32_t q0)
{
    const uint64_t most = e->rerank_chunk ? e->rerank_chunk : RERANK_CHUNK_ROWS, kk = e->search.kk;
    uint32_t q1 = q0 + 1;
    while (q1 < nq && (uint64_t)(q1 + 1 - q0) * kk <= most) q1++;
    return q1;
}

cls_status dev_rerank_size(clx_engine *e, dev_flight *f)
{
    const dev_search *sr = &e->search;
    if (!sr->rerank_k) return CLS_OK;
    dev_rerank *rr = e->rerank;
    const cls_batch *bt = sr->rerank_batch;
    const cls_index *idx = e->idx;
    const unsigned fi = (unsigned)(f - e->flight);
    const uint32_t nq = f->b.nq, kk = f->b.kk;
    uint64_t nt = 0;
    uint32_t most_terms = 0;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t n = bt->q[algo_batch_query(&f->b, i)].num_terms;
        nt += n;
        if (n > most_terms) most_terms = n;
    }
    if (nt > UINT32_MAX / kk) return err_set(CLS_E_ARG, "the second ranking stage: %llu query terms at depth %u",
                                             (unsigned long long)nt, kk);
    const size_t qbytes = (size_t)nq * sizeof(abi_rerank_query), bytes = qbytes + nt * sizeof(abi_rerank_term);
    cls_status s;
    if ((s = dev_pinned_need(&e->dc, &rr->up[fi], bytes, "the second ranking stage's terms")) != CLS_OK) return s;
    if (!vec_reserve(&rr->fterms, &rr->fterms_cap, (size_t)most_terms + 1, sizeof *rr->fterms))
        return err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %u query terms", most_terms);
    abi_rerank_query *qs = rr->up[fi].host;
    abi_rerank_term *ts = (abi_rerank_term *)((char *)rr->up[fi].host + qbytes);
    uint32_t at = 0;
    for (uint32_t i = 0; i < nq; i++) {
        uint64_t qi = algo_batch_query(&f->b, i);
        const batch_query *q = &bt->q[qi];
        if ((s = feat_query_terms(rr->fx, bt, (size_t)qi, rr->fterms)) != CLS_OK) return s;
        qs[i] = (abi_rerank_query){.term_start = at, .num_terms = q->num_terms};
        for (uint32_t j = 0; j < q->num_terms; j++, at++) {
            const idx_term *te = &idx->terms[bt->terms[q->term_start + j].term];
            ts[at] = (abi_rerank_term){.idf = rr->fterms[j].idf, .weight = rr->fterms[j].weight,
                                       .pc = rr->fterms[j].pc, .query = i, .first_block = (uint32_t)te->first_block,
                                       .num_blocks = te->num_blocks};
        }
    }
    rr->t_count[fi] = at;
    /* the largest chunk's frequencies and rows */
    uint64_t most_tf = 0, most_rows = 0;
    for (uint32_t q0 = 0, q1; q0 < nq; q0 = q1) {
        q1 = chunk_end(e, nq, q0);
        uint64_t t1 = q1 < nq ? qs[q1].term_start : at, ntf = (t1 - qs[q0].term_start) * kk, nr = (uint64_t)(q1 - q0) * kk;
        if (ntf > most_tf) most_tf = ntf;
        if (nr > most_rows) most_rows = nr;
    }
    const size_t stride = rr->width + 1;
    if ((s = dev_buf_need(&e->dc, &rr->queries, qbytes, "the second ranking stage's queries")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &rr->terms, nt * sizeof(abi_rerank_term), "the second ranking stage's terms")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &rr->tf, most_tf * 4, "the candidates' frequencies")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &rr->rows, most_rows * stride * sizeof(float), "the candidates' rows")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &rr->model, most_rows * sizeof(float), "the candidates' model scores")) != CLS_OK ||
        (s = dev_buf_need(&e->dc, &rr->res, ABI_RR_WORDS((size_t)nq, sr->rerank_k) * 4, "the reranked hits")) != CLS_OK)
        return s;
    return CLS_OK;
}

cls_status dev_rerank_enqueue(clx_engine *e, dev_flight *f)
{
    const dev_search *sr = &e->search;
    if (!sr->rerank_k) return CLS_OK;
    dev_rerank *rr = e->rerank;
    const unsigned fi = (unsigned)(f - e->flight);
    cl_uint nq = f->b.nq, kk = f->b.kk, k = sr->rerank_k, nterms = rr->t_count[fi];
    const size_t qbytes = (size_t)nq * sizeof(abi_rerank_query), tbytes = (size_t)nterms * sizeof(abi_rerank_term);
    const abi_rerank_query *qs = rr->up[fi].host;
    cl_event ev;
    CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, rr->queries.mem, CL_FALSE, 0, qbytes, qs, 0, NULL, &ev));
    cls_status s = dev_record(&e->dc, ev, "upload", qbytes);
    if (s != CLS_OK) return s;
    if (tbytes) {
        CLX_TRY(clEnqueueWriteBuffer(e->dc.queue, rr->terms.mem, CL_FALSE, 0, tbytes, (const char *)qs + qbytes, 0,
                                     NULL, &ev));
        if ((s = dev_record(&e->dc, ev, "upload", tbytes)) != CLS_OK) return s;
    }
    cl_uint nwords, nfields = rr->nfields, stride = rr->width + 1, absent = rr->absent_bits;
    float mu = rr->mu, lambda = rr->lambda;
    if ((s = dev_words_count(e->d_words, &nwords)) != CLS_OK) return s;
    for (cl_uint q0 = 0, q1; q0 < nq; q0 = q1) {
        q1 = chunk_end(e, nq, q0);
        cl_uint t0 = qs[q0].term_start, t1 = q1 < nq ? qs[q1].term_start : nterms, nqc = q1 - q0;
        if (t1 > t0) {
            dev_arg a[] = {DEV_MEM(e->d_words),  DEV_U32(nwords),     DEV_MEM(e->d_blocks), DEV_MEM(e->out.mem),
                           DEV_U32(nq),          DEV_U32(kk),         DEV_MEM(rr->queries.mem), DEV_MEM(rr->terms.mem),
                           DEV_U32(t0),          DEV_MEM(rr->tf.mem)};
            if ((s = dev_run(&e->dc, "rerank_tf", a, (size_t)(t1 - t0) * kk, e->idx->block_size, "rerank tf")) != CLS_OK)
                return s;
        }
        size_t slots = (size_t)nqc * kk;
        dev_arg fa[] = {DEV_MEM(e->out.mem),   DEV_U32(nq),           DEV_U32(kk),           DEV_U32(q0),
                        DEV_U32(nqc),          DEV_MEM(rr->queries.mem), DEV_MEM(rr->terms.mem), DEV_U32(t0),
                        DEV_MEM(rr->tf.mem),   DEV_MEM(rr->doclen),   DEV_MEM(e->d_norms),   DEV_MEM(rr->fields),
                        DEV_U32(nfields),      {sizeof mu, &mu},      {sizeof lambda, &lambda}, DEV_U32(absent),
                        DEV_U32(stride),       DEV_MEM(rr->rows.mem)};
        if ((s = dev_run(&e->dc, "features_rows", fa, (slots + RERANK_WG_FEATURES - 1) / RERANK_WG_FEATURES,
                         RERANK_WG_FEATURES, "features")) != CLS_OK ||
            (s = rank_dev_enqueue(&rr->rd, rr->rows.mem, stride, slots, rr->model.mem)) != CLS_OK)
            return s;
        dev_arg oa[] = {DEV_MEM(e->out.mem), DEV_U32(nq), DEV_U32(kk), DEV_U32(k), DEV_U32(q0),
                        DEV_MEM(rr->model.mem), DEV_MEM(rr->res.mem)};
        if ((s = dev_run(&e->dc, "rerank_order", oa, nqc, rr->wg_order, "rerank order")) != CLS_OK) return s;
    }
    return CLS_OK;
}

size_t dev_rerank_words(const clx_engine *e, const dev_flight *f)
{
    return e->search.rerank_k ? ABI_RR_WORDS((size_t)f->b.nq, e->search.rerank_k) : 0;
}

cl_mem dev_rerank_results(const clx_engine *e) { return e->rerank ? e->rerank->res.mem : NULL; }

cls_status dev_rerank_collect(clx_engine *e, dev_flight *f, const uint32_t *w, cls_results *r)
{
    const size_t nq = f->b.nq, k = e->search.rerank_k;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t m = w[i];
        if (m > k) return err_set(CLS_E_OPENCL, "rerank_order returned %u hits for k = %zu", m, k);
        uint64_t qi = algo_batch_query(&f->b, i);
        memcpy(r->docs + qi * k, w + ABI_RR_DOC(nq, k, i, 0), (size_t)m * 4);
        memcpy(r->scores + qi * k, w + ABI_RR_MODEL(nq, k, i, 0), (size_t)m * 4);
        memcpy(r->first + qi * k, w + ABI_RR_FIRST(nq, k, i, 0), (size_t)m * 4);
        r->start[qi + 1] = m;
    }
    return CLS_OK;
}

cls_status dev_rerank_prepare_results(const clx_engine *e, cls_results *r)
{
    if (!e->search.rerank_k) return CLS_OK;
    if (!vec_reserve(&r->first, &r->cap_first, r->nq * (uint64_t)e->search.kk + 1, sizeof *r->first))
        return err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %llu hits",
                       (unsigned long long)(r->nq * (uint64_t)e->search.kk));
    return CLS_OK;
}

void dev_rerank_pack(const clx_engine *e, cls_results *r)
{
    const uint64_t k = e->search.rerank_k;
    for (uint64_t i = 0; i < r->nq; i++) {
        uint64_t m = r->start[i + 1], at = r->start[i];
        if (at != i * k && m) {
            memmove(r->docs + at, r->docs + i * k, m * 4);
            memmove(r->scores + at, r->scores + i * k, m * 4);
            memmove(r->first + at, r->first + i * k, m * 4);
        }
        r->start[i + 1] = at + m;
    }
    r->total = r->start[r->nq];
    r->reranked = 1; /* final: the scheduler's stage leaves them (rerank_run) */
    r->scored = 1;   /* on this device: the counter rerank_queries_device */
}

void clx_set_rerank_chunk(clx_engine *e, uint64_t rows) { e->rerank_chunk = rows; }
