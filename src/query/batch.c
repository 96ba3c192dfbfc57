/* Query batches: analyse each query with the index's own analyzer, map terms to ids, merge
 * repeats into a query weight (as Anserini's bag-of-words query does), and keep it all in
 * arrays that grow geometrically and are reused when the batch is cleared. */
#include <stdlib.h>
#include <string.h>

#include "query/batch.h"
#include "util/err.h"
#include "util/vec.h"
#include "index/index.h"

cls_status cls_batch_create(const cls_index *idx, cls_batch **out)
{
    if (!idx || !out) return err_set(CLS_E_ARG, "cls_batch_create: NULL argument");
    *out = NULL;
    cls_batch *b = calloc(1, sizeof *b);
    if (!b) return err_set(CLS_E_NOMEM, "cls_batch_create: out of memory");
    cls_analyzer_opts o;
    cls_index_analyzer(idx, &o);
    cls_status s = an_create(&o, &b->an);
    if (s != CLS_OK) {
        free(b);
        return s;
    }
    /* The term array is never NULL: the engines form bt->terms + term_start for every query,
     * the query of no known term included, and NULL + 0 is undefined. */
    if (!vec_reserve(&b->terms, &b->terms_cap, 1, sizeof *b->terms)) {
        cls_batch_free(b);
        return err_set(CLS_E_NOMEM, "cls_batch_create: out of memory");
    }
    b->idx = idx;
    *out = b;
    return CLS_OK;
}

typedef struct add_ctx {
    cls_batch *b;
    batch_query *q;
    int nomem;
} add_ctx;

static int on_query_term(void *user, const char *term, size_t len)
{
    add_ctx *c = user;
    cls_batch *b = c->b;
    uint32_t id = idx_lookup(b->idx, term, len);
    if (id == UINT32_MAX) {
        c->q->unknown++;
        return 0;
    }
    batch_term *t = b->terms + c->q->term_start;
    for (uint32_t i = 0; i < c->q->num_terms; i++) /* queries are short: a scan is enough */
        if (t[i].term == id) {
            t[i].qtf++;
            return 0;
        }
    if (!vec_reserve(&b->terms, &b->terms_cap, b->nterms + 1, sizeof *b->terms)) {
        c->nomem = 1;
        return 1;
    }
    b->terms[b->nterms++] = (batch_term){id, 1};
    c->q->num_terms++;
    return 0;
}

cls_status cls_batch_add(cls_batch *b, const char *qid, const char *text)
{
    if (!b || !qid || !text) return err_set(CLS_E_ARG, "cls_batch_add: NULL argument");
    size_t qlen = strlen(qid);
    if (qlen == 0 || strpbrk(qid, " \t\n\r"))
        return err_set(CLS_E_FORMAT, "query id '%s' is empty or holds white space", qid);
    if (!vec_reserve(&b->q, &b->q_cap, b->nq + 1, sizeof *b->q) ||
        !vec_reserve(&b->qids, &b->qids_cap, b->qids_len + qlen + 1, 1))
        return err_set(CLS_E_NOMEM, "cls_batch_add: out of memory");
    batch_query *q = &b->q[b->nq];
    *q = (batch_query){.qid_off = b->qids_len, .term_start = b->nterms};
    add_ctx c = {b, q, 0};
    cls_status s = an_run(b->an, text, strlen(text), on_query_term, &c);
    if (c.nomem || s != CLS_OK) {
        b->nterms = q->term_start;
        return c.nomem ? err_set(CLS_E_NOMEM, "cls_batch_add: out of memory") : s;
    }
    memcpy(b->qids + b->qids_len, qid, qlen + 1);
    b->qids_len += qlen + 1;
    b->nq++;
    return CLS_OK;
}

void cls_batch_clear(cls_batch *b)
{
    b->nq = b->nterms = b->qids_len = 0;
}

size_t cls_batch_count(const cls_batch *b) { return (size_t)b->nq; }
const char *cls_batch_qid(const cls_batch *b, size_t i) { return i < b->nq ? b->qids + b->q[i].qid_off : NULL; }
size_t cls_batch_terms(const cls_batch *b, size_t i) { return i < b->nq ? b->q[i].num_terms : 0; }

void cls_batch_free(cls_batch *b)
{
    if (!b) return;
    an_free(b->an);
    free(b->q);
    free(b->terms);
    free(b->qids);
    free(b);
}

/* ---- Results ------------------------------------------------------------------------------ */

cls_status cls_results_create(cls_results **out)
{
    if (!out) return err_set(CLS_E_ARG, "cls_results_create: NULL argument");
    *out = calloc(1, sizeof **out);
    return *out ? CLS_OK : err_set(CLS_E_NOMEM, "cls_results_create: out of memory");
}

void cls_results_free(cls_results *r)
{
    if (!r) return;
    free(r->start);
    free(r->docs);
    free(r->scores);
    free(r);
}

cls_status results_reset(cls_results *r, uint64_t nq, uint64_t total)
{
    size_t c1 = r->cap_total, c2 = r->cap_total;
    if (!vec_reserve(&r->start, &r->cap_q, nq + 1, sizeof *r->start) ||
        !vec_reserve(&r->docs, &c1, total, sizeof *r->docs) ||
        !vec_reserve(&r->scores, &c2, total, sizeof *r->scores))
        return err_set(CLS_E_NOMEM, "results: out of memory for %llu hits", (unsigned long long)total);
    r->cap_total = c1 < c2 ? c1 : c2;
    r->nq = nq;
    r->start[0] = 0;
    r->total = 0;
    return CLS_OK;
}

size_t cls_results_count(const cls_results *r) { return (size_t)r->nq; }

void cls_results_get(const cls_results *r, size_t i, size_t *n, const uint32_t **docs, const float **scores)
{
    if (i >= r->nq) {
        *n = 0;
        if (docs) *docs = NULL;
        if (scores) *scores = NULL;
        return;
    }
    *n = (size_t)(r->start[i + 1] - r->start[i]);
    if (docs) *docs = r->docs + r->start[i];
    if (scores) *scores = r->scores + r->start[i];
}

cls_status cls_results_compare(const cls_results *a, const cls_results *b, double tol)
{
    if (a->nq != b->nq)
        return err_set(CLS_E_MISMATCH, "%llu queries against %llu", (unsigned long long)a->nq,
                       (unsigned long long)b->nq);
    for (uint64_t q = 0; q < a->nq; q++) {
        uint64_t na = a->start[q + 1] - a->start[q], nb = b->start[q + 1] - b->start[q];
        if (na != nb)
            return err_set(CLS_E_MISMATCH, "query %llu: %llu hits against %llu", (unsigned long long)q,
                           (unsigned long long)na, (unsigned long long)nb);
        for (uint64_t j = 0; j < na; j++) {
            uint32_t da = a->docs[a->start[q] + j], db = b->docs[b->start[q] + j];
            double sa = a->scores[a->start[q] + j], sb = b->scores[b->start[q] + j];
            double m = sa > sb ? sa : sb;
            if (da != db || (m < 0 ? -m : m) * tol < (sa > sb ? sa - sb : sb - sa))
                return err_set(CLS_E_MISMATCH, "query %llu rank %llu: doc %u score %.9g against doc %u score %.9g",
                               (unsigned long long)q, (unsigned long long)j + 1, da, sa, db, sb);
        }
    }
    return CLS_OK;
}
