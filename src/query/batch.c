/* Query batches: analyse each query with the index's own analyzer, map terms to ids, merge
 * repeats into a query weight (as Anserini's bag-of-words query does: the weights of a term's
 * occurrences add, term^w giving w), and keep it all in arrays that grow geometrically and are
 * reused when the batch is cleared. */
#include <stdio.h>
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
    float weight; /* of the terms being analysed */
} add_ctx;

static int on_query_term(void *user, const char *term, size_t len)
{
    add_ctx *c = user;
    cls_batch *b = c->b;
    uint32_t id = idx_lookup(b->idx, term, len);
    /* A shard's term that none of its documents holds (an empty list) is unknown here: it adds
     * to no score, and AND finds nothing in the shard, as in the whole index; so no engine
     * meets an empty list. */
    if (id == UINT32_MAX || b->idx->terms[id].df == 0) {
        c->q->unknown++;
        return 0;
    }
    batch_term *t = b->terms + c->q->term_start;
    for (uint32_t i = 0; i < c->q->num_terms; i++) /* queries are short: a scan is enough */
        if (t[i].term == id) {
            t[i].weight += c->weight;
            return 0;
        }
    if (!vec_reserve(&b->terms, &b->terms_cap, b->nterms + 1, sizeof *b->terms)) {
        c->nomem = 1;
        return 1;
    }
    b->terms[b->nterms++] = (batch_term){id, c->weight};
    c->q->num_terms++;
    return 0;
}

/* Weights are read as decimal numbers (digits with at most one point, an optional exponent)
 * and kept within WEIGHT_MIN..WEIGHT_MAX: far from float's ends, so that no weight, idf times
 * weight or contribution is subnormal (which devices may flush to zero, unlike the host) or
 * overflows, and scores stay bit-identical across engines. */
#define WEIGHT_MAX_CHARS 64
#define WEIGHT_MIN 1e-9
#define WEIGHT_MAX 1e9

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* s[0..n) as a weight into *w: 1 when it is one and in range. The digits go to strtod without
 * their point (the exponent moved instead), so the locale's decimal point plays no part. */
static int parse_weight(const char *s, size_t n, float *w)
{
    char buf[WEIGHT_MAX_CHARS + 24];
    size_t i = 0, k = 0;
    long frac = 0, e = 0;
    int point = 0;
    if (n == 0 || n > WEIGHT_MAX_CHARS) return 0;
    for (; i < n && (is_digit(s[i]) || (s[i] == '.' && !point)); i++) {
        if (s[i] == '.') point = 1;
        else buf[k++] = s[i], frac += point;
    }
    if (k == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int neg = ++i < n && s[i] == '-';
        if (i < n && (s[i] == '-' || s[i] == '+')) i++;
        if (i == n || !is_digit(s[i])) return 0;
        for (; i < n && is_digit(s[i]); i++)
            if (e < 100000) e = e * 10 + (s[i] - '0'); /* beyond that the range check refuses it anyway */
        if (neg) e = -e;
    }
    if (i != n) return 0;
    snprintf(buf + k, sizeof buf - k, "e%ld", e - frac);
    double v = strtod(buf, NULL);
    if (!(v >= WEIGHT_MIN && v <= WEIGHT_MAX)) return 0;
    *w = (float)v;
    return 1;
}

/* Analyses text with the weight syntax: term^w weights every term the analyser makes of the
 * text before the caret, back to the white space before it; the rest weighs 1. The syntax is
 * read first because the analyser takes a caret for a separator, and would index w itself.
 * c NULL: the syntax only, nothing analysed (cls_query_check). */
static cls_status add_text(add_ctx *c, const char *qid, const char *text)
{
    const char *p = text, *end = text + strlen(text);
    for (;;) {
        const char *caret = memchr(p, '^', (size_t)(end - p));
        if (c) c->weight = 1.0f;
        if (!c && !caret) return CLS_OK;
        if (!caret) return p < end ? an_run(c->b->an, p, (size_t)(end - p), on_query_term, c) : CLS_OK;
        const char *ts = caret, *we = caret + 1;
        while (ts > p && !is_space(ts[-1])) ts--;
        while (we < end && !is_space(*we)) we++;
        float w;
        if (ts == caret || !parse_weight(caret + 1, (size_t)(we - caret - 1), &w)) {
            int n = (int)(we - ts > 80 ? 80 : we - ts);
            return err_set(CLS_E_FORMAT, "query '%s': bad weight in '%.*s%s': %s", qid, n, ts, we - ts > 80 ? "..." : "",
                           ts == caret ? "a caret must follow a term (term^2.5)"
                                       : "a weight is a decimal number from 1e-9 to 1e9 (term^2.5)");
        }
        if (!c) {
            p = we;
            continue;
        }
        cls_status s = ts > p ? an_run(c->b->an, p, (size_t)(ts - p), on_query_term, c) : CLS_OK;
        if (s != CLS_OK) return s;
        c->weight = w;
        if ((s = an_run(c->b->an, ts, (size_t)(caret - ts), on_query_term, c)) != CLS_OK) return s;
        p = we;
    }
}

cls_status cls_query_check(const char *qid, const char *text)
{
    if (!qid || !text) return err_set(CLS_E_ARG, "cls_query_check: NULL argument");
    return add_text(NULL, qid, text);
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
    add_ctx c = {b, q, 0, 1.0f};
    cls_status s = add_text(&c, qid, text);
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
    free(r->first);
    free(r->model);
    free(r);
}

uint64_t batch_query_postings(const cls_batch *b, uint64_t q)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < b->q[q].num_terms; i++) n += b->idx->terms[b->terms[b->q[q].term_start + i].term].df;
    return n;
}

uint64_t batch_postings(const cls_batch *b, const uint32_t *order, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) sum += batch_query_postings(b, order ? order[i] : i);
    return sum;
}

void batch_cost_features(const cls_batch *b, const uint32_t *order, uint64_t n, double f[BATCH_COST_FEATURES])
{
    for (int i = 0; i < BATCH_COST_FEATURES; i++) f[i] = 0;
    for (uint64_t i = 0; i < n; i++) {
        const batch_query *q = &b->q[order ? order[i] : i];
        uint64_t total = 0, first = UINT64_MAX, second = UINT64_MAX;
        for (uint32_t t = 0; t < q->num_terms; t++) {
            uint64_t df = b->idx->terms[b->terms[q->term_start + t].term].df;
            total += df;
            if (df < first) second = first, first = df;
            else if (df < second) second = df;
        }
        uint32_t lists = q->num_terms + q->unknown;
        if (q->unknown) second = first, first = 0; /* an unknown term's list: empty, the shortest */
        f[BATCH_COST_QUERIES] += 1;
        f[BATCH_COST_POSTINGS] += (double)total;
        f[BATCH_COST_SHORTEST] += lists >= 1 && first != UINT64_MAX ? (double)first : 0;
        f[BATCH_COST_SECOND] += lists >= 2 && second != UINT64_MAX ? (double)second : 0;
        f[BATCH_COST_TERMS] += lists;
    }
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
    r->reranked = 0;
    r->scored = 0;
    return CLS_OK;
}

void results_pack(cls_results *r, uint32_t kk)
{
    for (uint64_t i = 0; i < r->nq; i++) {
        uint64_t m = r->start[i + 1], at = r->start[i];
        if (at != i * kk && m) {
            memmove(r->docs + at, r->docs + i * kk, m * 4);
            memmove(r->scores + at, r->scores + i * kk, m * 4);
        }
        r->start[i + 1] = at + m;
    }
    r->total = r->start[r->nq];
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

void cls_results_get_first(const cls_results *r, size_t i, size_t *n, const float **scores)
{
    cls_results_get(r, i, n, NULL, scores);
    if (r->reranked && i < r->nq && scores) *scores = r->first + r->start[i];
}

int cls_results_reranked(const cls_results *r) { return r && r->reranked; }

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
