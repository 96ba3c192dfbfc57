/* The feature table (features.h) and the extractor: a row per feature, its definition written
 * precisely enough to recompute it by hand, and its code. */
#include "rank/features.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "index/index.h"
#include "query/batch.h"
#include "util/err.h"
#include "util/vec.h"

void feat_params_default(feat_params *p)
{
    p->k1 = IDX_SCORE_K1;
    p->b = IDX_SCORE_B;
    p->mu = FEAT_MU_DEFAULT;
    p->lambda = FEAT_LAMBDA_DEFAULT;
}

cls_status feat_params_check(const feat_params *p)
{
    if (!(p->k1 >= 0 && p->k1 <= 100)) return err_set(CLS_E_ARG, "features: k1 must be from 0 to 100, not %g", (double)p->k1);
    if (!(p->b >= 0 && p->b <= 1)) return err_set(CLS_E_ARG, "features: b must be from 0 to 1, not %g", (double)p->b);
    if (!(p->mu > 0 && p->mu <= 1e9))
        return err_set(CLS_E_ARG, "features: mu must be above 0, up to 1e9, not %g", (double)p->mu);
    if (!(p->lambda > 0 && p->lambda <= 1))
        return err_set(CLS_E_ARG, "features: lambda must be above 0, up to 1, not %g", (double)p->lambda);
    return CLS_OK;
}

/* ---- aggregates over the query's terms: float, in query-term order, 0 for a query of none ---- */

static float agg_sum(const float *v, uint32_t n)
{
    float s = 0.0f;
    for (uint32_t i = 0; i < n; i++) s = s + v[i];
    return s;
}

static float agg_min(const float *v, uint32_t n)
{
    float m = n ? v[0] : 0.0f;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

static float agg_max(const float *v, uint32_t n)
{
    float m = n ? v[0] : 0.0f;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

static float agg_mean(const float *v, uint32_t n) { return n ? agg_sum(v, n) / (float)n : 0.0f; }

static float agg_var(const float *v, uint32_t n)
{
    if (!n) return 0.0f;
    float mean = agg_mean(v, n), s = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        float d = v[i] - mean;
        s = s + d * d;
    }
    return s / (float)n;
}

/* A family's five rows' code. */
#define AGGREGATE_FNS(fam, FAM)                                                                  \
    static float fam##_sum(const feat_pair *p) { return agg_sum(p->v[FAM], p->n); }               \
    static float fam##_min(const feat_pair *p) { return agg_min(p->v[FAM], p->n); }               \
    static float fam##_max(const feat_pair *p) { return agg_max(p->v[FAM], p->n); }               \
    static float fam##_mean(const feat_pair *p) { return agg_mean(p->v[FAM], p->n); }             \
    static float fam##_var(const feat_pair *p) { return agg_var(p->v[FAM], p->n); }
AGGREGATE_FNS(tf, FEAT_TF)
AGGREGATE_FNS(idf, FEAT_IDF)
AGGREGATE_FNS(bm25, FEAT_BM25)
AGGREGATE_FNS(tfidf, FEAT_TFIDF)
AGGREGATE_FNS(lm_dir, FEAT_LM_DIR)
AGGREGATE_FNS(lm_jm, FEAT_LM_JM)

static float covered(const feat_pair *p)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < p->n; i++) c += p->tf[i] > 0;
    return (float)c;
}
static float covered_ratio(const feat_pair *p) { return p->n ? covered(p) / (float)p->n : 0.0f; }
static float doc_len(const feat_pair *p) { return (float)p->dl; }
static float query_len(const feat_pair *p) { return (float)p->n; }

/* The term-level definitions (t a query term, d the document; features.h's feat_term_values is
 * their code). */
#define DEF_TF "tf: the term's occurrences in the document (0 when absent)"
#define DEF_IDF                                                                                    \
    "idf = ln(1 + (N - df + 0.5) / (df + 0.5)) in double, rounded to float (libm's log): N the collection's " \
    "documents, df the term's documents in the collection (BM25's idf; the same whether the document holds the term)"
#define DEF_BM25                                                                                   \
    "bm25 = the first stage's BM25 contribution w tf / (tf + norm) in float: w = idf x qw in double, rounded to " \
    "float (qw the term's query weight: 1 an occurrence, w for term^w), norm = k1 (1 - b + b dl / avgdl) in double, " \
    "rounded to float (avgdl the collection's average length, 1 when it has none); 0 when absent. An impact index: " \
    "qw x tf. So bm25_sum is the first stage's score, bit for bit"
#define DEF_TFIDF "tfidf = tf x idf in float (0 when absent)"
#define DEF_LM_DIR                                                                                 \
    "lm_dir = ln((tf + mu pc) / (dl + mu)), each operation in float in that order: Dirichlet smoothing; pc = cf / |C| " \
    "in double, rounded to float (cf the term's occurrences in the index, |C| its tokens); tf = 0 when absent"
#define DEF_LM_JM                                                                                  \
    "lm_jm = ln((1 - lambda) (tf / dl) + lambda pc), each operation in float in that order (tf / dl = 0 when dl is " \
    "0): Jelinek-Mercer smoothing; pc as lm_dir's; tf = 0 when absent"

#define FAMILY_ROWS(fam, def)                                                                      \
    {#fam "_sum", "sum over the query's terms, from 0 in query-term order, of " def, fam##_sum},            \
    {#fam "_min", "least over the query's terms of " def, fam##_min},                                      \
    {#fam "_max", "greatest over the query's terms of " def, fam##_max},                                   \
    {#fam "_mean", "sum / n (float) of " def, fam##_mean},                                                 \
    {#fam "_var", "population variance: the sum from 0 in query-term order of (v - mean)^2, over n (float), of " def, \
     fam##_var}

static const feat_row TABLE[FEAT_FIXED] = {
    FAMILY_ROWS(tf, DEF_TF),
    FAMILY_ROWS(idf, DEF_IDF),
    FAMILY_ROWS(bm25, DEF_BM25),
    FAMILY_ROWS(tfidf, DEF_TFIDF),
    FAMILY_ROWS(lm_dir, DEF_LM_DIR),
    FAMILY_ROWS(lm_jm, DEF_LM_JM),
    {"covered", "the query's terms the document holds (tf > 0)", covered},
    {"covered_ratio", "covered / n in float (0 when n is 0)", covered_ratio},
    {"doc_len", "dl: the document's indexed tokens (its length as BM25 reads it)", doc_len},
    {"query_len", "n: the query's distinct known terms (stop words and terms the index lacks dropped)", query_len},
};

const feat_row *feat_table(void) { return TABLE; }

void feat_pair_compute(const feat_term *terms, const uint32_t *tf, uint32_t n, const feat_doc *d, cls_scoring scoring,
                       const feat_params *p, float *scratch, float *out)
{
    feat_pair pair = {.n = n, .tf = tf, .dl = d->dl};
    float *v[FEAT_FAMILIES];
    for (int f = 0; f < FEAT_FAMILIES; f++) pair.v[f] = v[f] = scratch + (size_t)f * n;
    for (uint32_t i = 0; i < n; i++) {
        float t[FEAT_FAMILIES];
        feat_term_values(&terms[i], tf[i], d, scoring, p, t);
        for (int f = 0; f < FEAT_FAMILIES; f++) v[f][i] = t[f];
    }
    for (uint32_t r = 0; r < FEAT_FIXED; r++) out[r] = TABLE[r].value(&pair);
}

_Static_assert(sizeof(feat_term) == 12 && sizeof(feat_doc) == 8, "cl/features.cl reads feat_term as 3 floats, feat_doc as 2 words");

cls_status feat_batch_check(const feat_batch *b)
{
    for (uint32_t q = 0; q < b->nq; q++)
        if (b->term_start[q] > b->nterms || b->num_terms[q] > b->nterms - b->term_start[q])
            return err_set(CLS_E_ARG, "features: query %u's terms pass the batch's %zu", q, b->nterms);
    for (uint32_t j = 0; j < b->npairs; j++) {
        if (b->pair_query[j] >= b->nq) return err_set(CLS_E_ARG, "features: pair %u's query is past the batch's %u", j, b->nq);
        uint32_t n = b->num_terms[b->pair_query[j]];
        if (b->tf_start[j] > b->ntf || n > b->ntf - b->tf_start[j])
            return err_set(CLS_E_ARG, "features: pair %u's frequencies pass the batch's %zu", j, b->ntf);
    }
    return feat_params_check(&b->p);
}

void feat_batch_compute(const feat_batch *b, float *scratch, float *out)
{
    for (uint32_t j = 0; j < b->npairs; j++) {
        uint32_t q = b->pair_query[j];
        feat_pair_compute(b->terms + b->term_start[q], b->tf + b->tf_start[j], b->num_terms[q], &b->docs[j], b->scoring,
                          &b->p, scratch, out + (size_t)j * FEAT_FIXED);
    }
}

/* ---- the extractor ------------------------------------------------------------------------------ */

typedef struct cand {
    uint32_t doc, row; /* a candidate and its row in the caller's order */
} cand;

struct feat_extractor {
    const cls_index *idx;
    feat_params p;
    double avgdl;
    uint64_t *cf;                /* per term of the index; 0 until the term is met (a known term has cf >= 1) */
    uint32_t nfields;            /* numeric stored fields */
    uint32_t field[CLS_MAX_FIELDS];
    char *field_name[CLS_MAX_FIELDS], *field_def[CLS_MAX_FIELDS];
    uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK]; /* one decoded block */
    /* per query, grown as queries need */
    cand *cands;
    size_t cands_cap;
    uint32_t *tf;                /* candidates x terms, candidate-major in sorted order */
    size_t tf_cap;
    feat_term *terms;
    size_t terms_cap;
    float *scratch;
    size_t scratch_cap;
};

/* Whether v[0..len) reads whole as a finite decimal number; its value in *out. */
static int numeric(const char *v, size_t len, double *out)
{
    if (len == 0 || len > 64) return 0;
    char buf[80], *end;
    memcpy(buf, v, len);
    buf[len] = '\0';
    /* decimal only: no hex, inf or nan, no leading space */
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789+-.eE", buf[i])) return 0;
    errno = 0;
    double d = strtod(buf, &end);
    if (end != buf + len || errno == ERANGE || !isfinite(d) || fabs(d) > 3.4e38) return 0;
    *out = d;
    return 1;
}

static cls_status find_numeric_fields(feat_extractor *x)
{
    const cls_index *idx = x->idx;
    for (uint32_t f = 0; f < cls_index_field_count(idx); f++) {
        uint32_t present = 0, ok = 1;
        for (uint32_t d = 0; ok && d < idx->num_docs; d++) {
            size_t len;
            const char *v = cls_index_field(idx, d, f, &len);
            double val;
            if (!v) continue;
            present++;
            ok = numeric(v, len, &val);
        }
        if (!ok || !present) continue;
        const char *name = cls_index_field_name(idx, f);
        size_t n = strlen(name) + 64;
        char *nm = malloc(n), *def = malloc(n + 160);
        if (!nm || !def) {
            free(nm);
            free(def);
            return err_set(CLS_E_NOMEM, "features: out of memory");
        }
        snprintf(nm, n, "field:%s", name);
        snprintf(def, n + 160,
                 "the stored field %s read as a decimal number (strtod, the whole value), rounded to float; 0 where "
                 "the document lacks it",
                 name);
        x->field[x->nfields] = f;
        x->field_name[x->nfields] = nm;
        x->field_def[x->nfields++] = def;
    }
    return CLS_OK;
}

cls_status feat_create(const cls_index *idx, const feat_params *p, feat_extractor **out)
{
    if (!idx || !p || !out) return err_set(CLS_E_ARG, "feat_create: NULL argument");
    *out = NULL;
    cls_status s = feat_params_check(p);
    if (s != CLS_OK) return s;
    if ((s = idx_verify_words(idx)) != CLS_OK) return s;
    feat_extractor *x = calloc(1, sizeof *x);
    if (!x || !(x->cf = calloc((size_t)idx->num_terms + 1, sizeof *x->cf))) {
        free(x);
        return err_set(CLS_E_NOMEM, "features: out of memory for %u terms", idx->num_terms);
    }
    x->idx = idx;
    x->p = *p;
    x->avgdl = idx->coll_avg_doc_len > 0 ? idx->coll_avg_doc_len : 1.0; /* as bm25_norms */
    if ((s = find_numeric_fields(x)) != CLS_OK || (s = cls_index_intact(idx)) != CLS_OK) {
        feat_free(x);
        return s;
    }
    *out = x;
    return CLS_OK;
}

cls_status feat_set_params(feat_extractor *x, const feat_params *p)
{
    cls_status s = feat_params_check(p);
    if (s == CLS_OK) x->p = *p;
    return s;
}

void feat_free(feat_extractor *x)
{
    if (!x) return;
    for (uint32_t i = 0; i < x->nfields; i++) {
        free(x->field_name[i]);
        free(x->field_def[i]);
    }
    free(x->cf);
    free(x->cands);
    free(x->tf);
    free(x->terms);
    free(x->scratch);
    free(x);
}

uint32_t feat_count(const feat_extractor *x) { return FEAT_FIXED + x->nfields; }

const char *feat_name(const feat_extractor *x, uint32_t i)
{
    return i < FEAT_FIXED ? TABLE[i].name : i < feat_count(x) ? x->field_name[i - FEAT_FIXED] : NULL;
}

const char *feat_definition(const feat_extractor *x, uint32_t i)
{
    return i < FEAT_FIXED ? TABLE[i].definition : i < feat_count(x) ? x->field_def[i - FEAT_FIXED] : NULL;
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return x->doc != y->doc ? (x->doc < y->doc ? -1 : 1) : (x->row > y->row) - (x->row < y->row);
}

/* The first block of blocks[lo .. hi) whose last docID is at least doc (hi when none). */
static uint64_t block_reaching(const idx_block *blocks, uint64_t lo, uint64_t hi, uint32_t doc)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (blocks[mid].last < doc) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Term i (of nt) of the query, its list walked once: the candidates' frequencies into
 * x->tf[c * nt + i] (0 stays where a candidate lacks it), and the term's collection frequency
 * summed on the way the first time the term is met (then every block's frequencies decode). */
static cls_status walk_term(feat_extractor *x, uint32_t term, uint32_t i, uint32_t nt, uint32_t m)
{
    const cls_index *idx = x->idx;
    const idx_term *te = &idx->terms[term];
    uint64_t b = te->first_block, end = b + te->num_blocks, cf = 0;
    int need_cf = x->cf[term] == 0;
    uint32_t j = 0; /* next candidate, in docID order */
    cls_status s;
    while (b < end && (j < m || need_cf)) {
        if (!need_cf) {
            b = block_reaching(idx->blocks, b, end, x->cands[j].doc);
            if (b == end) break;
        }
        const idx_block *blk = &idx->blocks[b];
        uint32_t count = idx_info_count(blk->info);
        int have_freqs = 0;
        if (need_cf) {
            if ((s = idx_decode_freqs(idx, b, x->freqs)) != CLS_OK) return s;
            for (uint32_t k = 0; k < count; k++) cf += x->freqs[k];
            have_freqs = 1;
        }
        while (j < m && x->cands[j].doc < blk->first) j++; /* candidates between blocks lack the term */
        if (j < m && x->cands[j].doc <= blk->last) {
            if ((s = idx_decode_docs(idx, b, x->docs)) != CLS_OK) return s;
            if (!have_freqs && (s = idx_decode_freqs(idx, b, x->freqs)) != CLS_OK) return s;
            uint32_t k = 0;
            for (; j < m && x->cands[j].doc <= blk->last; j++) {
                while (k < count && x->docs[k] < x->cands[j].doc) k++;
                if (k < count && x->docs[k] == x->cands[j].doc) x->tf[(size_t)j * nt + i] = x->freqs[k];
            }
        }
        b++;
    }
    if (need_cf) x->cf[term] = cf;
    return CLS_OK;
}

/* What feat_query and feat_query_pairs share: query qi of bt checked, its candidates docs[0..n)
 * sorted into x->cands (each with its row), each term's frequencies in them gathered into x->tf
 * (row j of the sorted order, nt columns) by one walk of its list, and each term's values into
 * terms[0..nt). */
static cls_status gather(feat_extractor *x, const cls_batch *bt, size_t qi, const uint32_t *docs, uint32_t n,
                         feat_term *terms, uint32_t *nt_out)
{
    const cls_index *idx = x->idx;
    if (!bt || bt->idx != idx || qi >= bt->nq)
        return err_set(CLS_E_ARG, "features: query %zu is not one of a batch on the extractor's index", qi);
    const batch_query *q = &bt->q[qi];
    const batch_term *qt = bt->terms + q->term_start;
    uint32_t nt = q->num_terms;
    *nt_out = nt;
    for (uint32_t j = 0; j < n; j++)
        if (docs[j] >= idx->num_docs)
            return err_set(CLS_E_ARG, "features: docID %u is past the index's %u documents", docs[j], idx->num_docs);
    if (!vec_reserve(&x->cands, &x->cands_cap, n ? n : 1, sizeof *x->cands) ||
        !vec_reserve(&x->tf, &x->tf_cap, (size_t)n * nt + 1, sizeof *x->tf))
        return err_set(CLS_E_NOMEM, "features: out of memory for %u candidates of %u terms", n, nt);
    for (uint32_t j = 0; j < n; j++) x->cands[j] = (cand){docs[j], j};
    qsort(x->cands, n, sizeof *x->cands, cmp_cand);
    memset(x->tf, 0, (size_t)n * nt * sizeof *x->tf);
    cls_status s;
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t t = qt[i].term;
        if ((s = walk_term(x, t, i, nt, n)) != CLS_OK) return idx_intact(idx, s);
        terms[i] = (feat_term){
            .idf = bm25_idf(idx->coll_docs, idx_coll_df(idx, t)),
            .weight = bm25_weight(idx, t, qt[i].weight),
            .pc = (float)((double)x->cf[t] / (double)(idx->num_tokens ? idx->num_tokens : 1)),
        };
    }
    return CLS_OK;
}

/* Document doc's value of stored field f (x->field[f]): its number, 0 when absent (numeric at
 * creation; a file changed since reads as absent). */
static float field_value(const feat_extractor *x, uint32_t doc, uint32_t f)
{
    size_t len;
    const char *v = cls_index_field(x->idx, doc, x->field[f], &len);
    double val = 0;
    if (v && !numeric(v, len, &val)) val = 0;
    return (float)val;
}

cls_status feat_query_terms(feat_extractor *x, const cls_batch *bt, size_t qi, feat_term *terms)
{
    uint32_t nt, none = 0;
    cls_status s = gather(x, bt, qi, &none, 0, terms, &nt);
    return s == CLS_OK ? idx_intact(x->idx, CLS_OK) : s;
}

void feat_doc_fields(const feat_extractor *x, uint32_t doc, float *out)
{
    for (uint32_t f = 0; f < x->nfields; f++) out[f] = field_value(x, doc, f);
}

cls_status feat_query_pairs(feat_extractor *x, const cls_batch *bt, size_t qi, const uint32_t *docs, uint32_t n,
                            feat_term *terms, uint32_t *tf, feat_doc *d, float *fields)
{
    uint32_t nt;
    cls_status s = gather(x, bt, qi, docs, n, terms, &nt);
    if (s != CLS_OK) return s;
    const cls_index *idx = x->idx;
    for (uint32_t j = 0; j < n; j++) {
        const cand *c = &x->cands[j];
        uint32_t dl = idx->doclen[c->doc];
        d[c->row] = (feat_doc){dl, bm25_norm(x->p.k1, x->p.b, dl, x->avgdl)};
        memcpy(tf + (size_t)c->row * nt, x->tf + (size_t)j * nt, (size_t)nt * sizeof *tf);
        for (uint32_t f = 0; f < x->nfields; f++) fields[(size_t)c->row * x->nfields + f] = field_value(x, c->doc, f);
    }
    return idx_intact(idx, CLS_OK);
}

cls_status feat_query(feat_extractor *x, const cls_batch *bt, size_t qi, const uint32_t *docs, uint32_t n, float *out)
{
    uint32_t nt = bt && qi < bt->nq ? bt->q[qi].num_terms : 0, nf = feat_count(x);
    if (!vec_reserve(&x->terms, &x->terms_cap, nt + 1, sizeof *x->terms) ||
        !vec_reserve(&x->scratch, &x->scratch_cap, (size_t)FEAT_FAMILIES * nt + 1, sizeof *x->scratch))
        return err_set(CLS_E_NOMEM, "features: out of memory for a query of %u terms", nt);
    cls_status s = gather(x, bt, qi, docs, n, x->terms, &nt);
    if (s != CLS_OK) return s;
    const cls_index *idx = x->idx;
    for (uint32_t j = 0; j < n; j++) {
        const cand *c = &x->cands[j];
        uint32_t dl = idx->doclen[c->doc];
        feat_doc d = {dl, bm25_norm(x->p.k1, x->p.b, dl, x->avgdl)};
        float *row = out + (size_t)c->row * nf;
        feat_pair_compute(x->terms, x->tf + (size_t)j * nt, nt, &d, idx->scoring, &x->p, x->scratch, row);
        for (uint32_t f = 0; f < x->nfields; f++) row[FEAT_FIXED + f] = field_value(x, c->doc, f);
    }
    return idx_intact(idx, CLS_OK);
}
