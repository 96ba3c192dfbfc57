/* The second ranking stage's scores on the device executor (dev_engine.h: dev_rerank_score): the
 * candidates of a search the executor ran whole, read back from its batches, get their feature
 * rows from cl/features.cl and their model scores from cl/trees.cl, both on the engine's own
 * context and queue (their launches in its profile as "features" and "trees"); the ranking by
 * those scores is the scheduler's stage (rerank.h), as for every executor.
 *
 * The host gathers what the kernels read (each query's terms, each candidate's frequencies of
 * them by the extractor's walk, its length and norm, its numeric stored fields) and lays the
 * trees' rows out (feature i at column i + 1, column 0 absent); the features come back between
 * the two kernels. That round trip, and the read of the first stage's candidates before it, are
 * what makes it not yet a stage of the batch (docs/ARCHITECTURE.md, "The second ranking stage").
 *
 * A device that does not round division correctly would give features off by a bit: there the
 * scores are left to the host (r->scored stays 0), so results stay the same on every executor. */
#include <stdlib.h>
#include <string.h>

#include "engine/dev_engine.h"
#include "engine/rerank.h"
#include "rank/features.h"
#include "rank/rank_dev.h"
#include "util/err.h"
#include "util/vec.h"

struct dev_rerank {
    feat_extractor *fx;
    feat_cl *fc;
    rank_dev rd;
    int exact;            /* the features' kernel equals the extractor's rows bit for bit */
    uint32_t width, nfields;
    /* what the kernels read, grown to the largest search met */
    feat_term *terms;
    uint32_t *term_start, *num_terms, *pair_query, *tf_start, *tf;
    feat_doc *docs;
    float *fields, *fixed, *rows;
    size_t terms_cap, term_start_cap, num_terms_cap, pair_query_cap, tf_start_cap, tf_cap, docs_cap, fields_cap,
        fixed_cap, rows_cap;
};

void dev_rerank_free(dev_rerank *rr)
{
    if (!rr) return;
    feat_free(rr->fx);
    feat_cl_free(rr->fc);
    rank_dev_close(&rr->rd);
    free(rr->terms);
    free(rr->term_start);
    free(rr->num_terms);
    free(rr->pair_query);
    free(rr->tf_start);
    free(rr->tf);
    free(rr->docs);
    free(rr->fields);
    free(rr->fixed);
    free(rr->rows);
    free(rr);
}

/* The extractor and both programs on the engine's device, at its first reranked search. */
static cls_status dev_rerank_open(clx_engine *e)
{
    if (e->rerank) return CLS_OK;
    dev_rerank *rr = calloc(1, sizeof *rr);
    if (!rr) return err_set(CLS_E_NOMEM, "the second ranking stage on the device: out of memory");
    feat_params fp;
    feat_params_default(&fp);
    cls_status s = feat_create(e->idx, &fp, &rr->fx);
    if (s == CLS_OK) s = feat_cl_create_on(&e->dc, e->idx->scoring, &rr->fc);
    if (s == CLS_OK) s = rank_dev_open_on(&rr->rd, &e->dc, NULL);
    if (s != CLS_OK) {
        dev_rerank_free(rr);
        return err_wrap(s, "the second ranking stage on the device: ");
    }
    rr->exact = feat_cl_exact(rr->fc);
    rr->width = feat_count(rr->fx);
    rr->nfields = rr->width - FEAT_FIXED;
    e->rerank = rr;
    return CLS_OK;
}

#define GROW(arr, n) vec_reserve(&rr->arr, &rr->arr##_cap, (n) + 1, sizeof *rr->arr)

/* Candidates scored a launch at most (a query's own are never cut: up to CLS_MAX_K), so that the
 * host's and the device's buffers stay bounded whatever the search's size. */
#define RERANK_CHUNK_PAIRS ((uint64_t)1 << 18)

/* The queries [q0, q1) of r scored into r->model. */
static cls_status score_chunk(clx_engine *e, dev_rerank *rr, const cls_batch *b, cls_results *r, uint64_t q0,
                              uint64_t q1, const feat_params *fp, const rank_model *m)
{
    const uint32_t stride = rr->width + 1;
    const uint64_t base = r->start[q0], npairs = r->start[q1] - base, nq = q1 - q0;
    uint64_t nterms = 0, ntf = 0;
    for (uint64_t q = q0; q < q1; q++)
        if (r->start[q + 1] > r->start[q]) {
            nterms += b->q[q].num_terms;
            ntf += (r->start[q + 1] - r->start[q]) * b->q[q].num_terms;
        }
    if (!GROW(terms, nterms) || !GROW(term_start, nq) || !GROW(num_terms, nq) || !GROW(pair_query, npairs) ||
        !GROW(tf_start, npairs) || !GROW(tf, ntf) || !GROW(docs, npairs) || !GROW(fields, npairs * rr->nfields) ||
        !GROW(fixed, npairs * FEAT_FIXED) || !GROW(rows, npairs * stride))
        return err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %llu candidates",
                       (unsigned long long)npairs);
    uint64_t at_term = 0, at_tf = 0;
    cls_status s;
    for (uint64_t q = q0; q < q1; q++) {
        uint64_t from = r->start[q] - base, n = r->start[q + 1] - r->start[q];
        uint32_t nt = n ? b->q[q].num_terms : 0; /* a query without candidates brings no term */
        rr->term_start[q - q0] = (uint32_t)at_term;
        rr->num_terms[q - q0] = nt;
        for (uint64_t j = 0; j < n; j++) {
            rr->pair_query[from + j] = (uint32_t)(q - q0);
            rr->tf_start[from + j] = (uint32_t)(at_tf + j * nt);
        }
        if (n && (s = feat_query_pairs(rr->fx, b, (size_t)q, r->docs + base + from, (uint32_t)n, rr->terms + at_term,
                                       rr->tf + at_tf, rr->docs + from, rr->fields + from * rr->nfields)) != CLS_OK)
            return s;
        at_term += nt;
        at_tf += n * nt;
    }
    feat_batch fb = {.terms = rr->terms, .term_start = rr->term_start, .num_terms = rr->num_terms, .nq = (uint32_t)nq,
                     .nterms = at_term, .pair_query = rr->pair_query, .tf_start = rr->tf_start, .docs = rr->docs,
                     .npairs = (uint32_t)npairs, .tf = rr->tf, .ntf = at_tf, .scoring = e->idx->scoring, .p = *fp};
    if ((s = feat_cl_compute(rr->fc, &fb, rr->fixed)) != CLS_OK) return s;
    for (uint64_t j = 0; j < npairs; j++) {
        float *row = rr->rows + j * stride;
        row[0] = m->absent;
        memcpy(row + 1, rr->fixed + j * FEAT_FIXED, FEAT_FIXED * sizeof *row);
        memcpy(row + 1 + FEAT_FIXED, rr->fields + j * rr->nfields, rr->nfields * sizeof *row);
    }
    return rank_dev_score(&rr->rd, rr->rows, stride, (size_t)npairs, r->model + base);
}

void clx_set_rerank_chunk(clx_engine *e, uint64_t pairs) { e->rerank_chunk = pairs; }

cls_status dev_rerank_score(clx_engine *e, const cls_batch *b, const cls_search_params *p, cls_results *r)
{
    cls_status s = dev_rerank_open(e);
    if (s != CLS_OK) return s;
    dev_rerank *rr = e->rerank;
    if (!rr->exact) return CLS_OK; /* the host scores them (above) */
    const rank_model *m = &p->rerank->m;
    if (m->num_features > rr->width + 1)
        return err_set(CLS_E_ARG, "rerank model reads feature %u, the index's table has %u", m->num_features - 1,
                       rr->width);
    feat_params fp;
    feat_params_default(&fp);
    fp.k1 = p->k1;
    fp.b = p->b;
    if ((s = feat_set_params(rr->fx, &fp)) != CLS_OK || (s = rank_dev_load(&rr->rd, m)) != CLS_OK) return s;
    if (!vec_reserve(&r->model, &r->cap_model, r->total + 1, sizeof *r->model))
        return err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %llu scores",
                       (unsigned long long)r->total);
    for (uint64_t q0 = 0, q1; q0 < r->nq; q0 = q1) {
        uint64_t pairs = 0;
        for (q1 = q0; q1 < r->nq; q1++) {
            uint64_t n = r->start[q1 + 1] - r->start[q1];
            if (q1 > q0 && pairs + n > (e->rerank_chunk ? e->rerank_chunk : RERANK_CHUNK_PAIRS)) break;
            pairs += n;
        }
        if ((s = score_chunk(e, rr, b, r, q0, q1, &fp, m)) != CLS_OK) return s;
    }
    r->scored = 1;
    return CLS_OK;
}
