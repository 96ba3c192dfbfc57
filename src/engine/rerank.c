/* The second ranking stage (rerank.h) and the public model handle (cls_model). */
#include "engine/rerank.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/batch.h"
#include "rank/features.h"
#include "util/err.h"
#include "util/vec.h"

/* ---- cls_model ------------------------------------------------------------------------------- */

cls_status cls_model_load(const char *path, cls_model **out)
{
    if (!path || !out) return err_set(CLS_E_ARG, "cls_model_load: NULL argument");
    *out = NULL;
    cls_model *m = calloc(1, sizeof *m);
    if (!m) return err_set(CLS_E_NOMEM, "cls_model_load: out of memory");
    /* no feature count here: the index's table is known when a search uses the model */
    cls_status s = rank_model_load(path, 0, &m->m);
    if (s != CLS_OK) {
        free(m);
        return s;
    }
    char line[512];
    rank_model_describe(&m->m, line, sizeof line);
    snprintf(m->desc, sizeof m->desc, "%s (%.700s)", line, path);
    *out = m;
    return CLS_OK;
}

void cls_model_free(cls_model *m)
{
    if (!m) return;
    rank_model_free(&m->m);
    free(m);
}

const char *cls_model_describe(const cls_model *m) { return m ? m->desc : ""; }

uint32_t cls_model_features(const cls_model *m) { return m ? m->m.num_features : 0; }

/* ---- the stage --------------------------------------------------------------------------------- */

/* A candidate as the stage sorts it. */
typedef struct rr_hit {
    float score, first;
    uint32_t doc;
} rr_hit;

struct rerank_stage {
    const cls_index *idx;
    pthread_mutex_t mu;   /* the extractor and the buffers: one search's stage at a time */
    feat_extractor *fx;   /* opened by the first search that asks (NULL before) */
    uint32_t width;       /* its features */
    float *rows;          /* a query's candidates' features, depth x width */
    size_t rows_cap;
    float *scores;
    size_t scores_cap;
    rr_hit *hits;
    size_t hits_cap;
};

cls_status rerank_create(const cls_index *idx, rerank_stage **out)
{
    *out = NULL;
    rerank_stage *st = calloc(1, sizeof *st);
    if (!st) return err_set(CLS_E_NOMEM, "out of memory for the second ranking stage");
    st->idx = idx;
    pthread_mutex_init(&st->mu, NULL);
    *out = st;
    return CLS_OK;
}

void rerank_free(rerank_stage *st)
{
    if (!st) return;
    feat_free(st->fx);
    free(st->rows);
    free(st->scores);
    free(st->hits);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

uint32_t rerank_depth(const cls_search_params *p) { return p->rerank_depth ? p->rerank_depth : CLS_RERANK_DEPTH; }

/* The extractor, opened once (the lock held). */
static cls_status open_extractor(rerank_stage *st)
{
    if (st->fx) return CLS_OK;
    feat_params fp;
    feat_params_default(&fp);
    cls_status s = feat_create(st->idx, &fp, &st->fx);
    if (s != CLS_OK) return err_wrap(s, "the second ranking stage's features: ");
    st->width = feat_count(st->fx);
    return CLS_OK;
}

cls_status rerank_check(rerank_stage *st, const cls_search_params *p)
{
    if (!p->rerank) return CLS_OK;
    if (p->rerank_depth > CLS_MAX_K)
        return err_set(CLS_E_ARG, "rerank depth must be between 1 and %u (0: %u), not %u", CLS_MAX_K,
                       CLS_RERANK_DEPTH, p->rerank_depth);
    pthread_mutex_lock(&st->mu);
    cls_status s = open_extractor(st);
    uint32_t width = st->width;
    pthread_mutex_unlock(&st->mu);
    if (s != CLS_OK) return s;
    if (p->rerank->m.num_features > width + 1)
        return err_set(CLS_E_ARG,
                       "rerank model %s reads feature %u, but this index's feature table has %u (1 to %u, as "
                       "`clsearch features --list` numbers them): a model trained on other features",
                       p->rerank->desc, p->rerank->m.num_features - 1, width, width);
    return CLS_OK;
}

/* Model score descending, then docID ascending: the engines' hit order with the model's score. */
static int hit_cmp(const void *a, const void *b)
{
    const rr_hit *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

cls_status rerank_run(rerank_stage *st, const cls_batch *b, const cls_search_params *p, uint32_t k, cls_results *r)
{
    if (r->reranked) { /* the executor ran the stage in its batches (dev_rerank.c): the hits are final */
        r->scored = 0;
        return CLS_OK;
    }
    const rank_model *m = &p->rerank->m;
    uint64_t most = 0;
    for (uint64_t q = 0; q < r->nq; q++)
        if (r->start[q + 1] - r->start[q] > most) most = r->start[q + 1] - r->start[q];
    pthread_mutex_lock(&st->mu);
    cls_status s = open_extractor(st);
    feat_params fp;
    feat_params_default(&fp);
    fp.k1 = p->k1;
    fp.b = p->b;
    if (s == CLS_OK) s = feat_set_params(st->fx, &fp);
    const int scored = r->scored; /* the executor scored them: the stage only ranks */
    const uint32_t stride = st->width + 1; /* a row as SVMlight numbers it: feature i at i + 1, 0 absent */
    if (s == CLS_OK && m->num_features > stride)
        s = err_set(CLS_E_ARG, "rerank model reads feature %u, the index's table has %u", m->num_features - 1,
                    st->width);
    if (s == CLS_OK && (!vec_reserve(&st->rows, &st->rows_cap, most * stride + 1, sizeof *st->rows) ||
                        !vec_reserve(&st->scores, &st->scores_cap, most + 1, sizeof *st->scores) ||
                        !vec_reserve(&st->hits, &st->hits_cap, most + 1, sizeof *st->hits) ||
                        !vec_reserve(&r->first, &r->cap_first, r->total + 1, sizeof *r->first)))
        s = err_set(CLS_E_NOMEM, "the second ranking stage: out of memory for %llu candidates of %u features",
                    (unsigned long long)most, st->width);
    /* each query's hits move to the front of its range (k or fewer of them), so the packed results
     * are rewritten in place, query by query, from the hits array */
    uint64_t at = 0;
    for (uint64_t q = 0; q < r->nq && s == CLS_OK; q++) {
        uint64_t from = r->start[q], n = r->start[q + 1] - from;
        const float *model = scored ? r->model + from : st->scores;
        if (!scored) {
            if (n && (s = feat_query(st->fx, b, (size_t)q, r->docs + from, (uint32_t)n, st->rows)) != CLS_OK) break;
            /* the extractor's rows of width floats spread to the model's numbering, the last
             * first so that no row is overwritten before it has moved */
            for (uint64_t j = n; j-- > 0;) {
                memmove(st->rows + j * stride + 1, st->rows + j * st->width, st->width * sizeof *st->rows);
                st->rows[j * stride] = m->absent;
            }
            rank_model_score_rows(m, st->rows, stride, (size_t)n, st->scores);
        }
        for (uint64_t i = 0; i < n; i++)
            st->hits[i] = (rr_hit){.score = model[i], .first = r->scores[from + i], .doc = r->docs[from + i]};
        qsort(st->hits, (size_t)n, sizeof *st->hits, hit_cmp);
        uint64_t keep = n < k ? n : k;
        r->start[q] = at;
        for (uint64_t i = 0; i < keep; i++, at++) {
            r->docs[at] = st->hits[i].doc;
            r->scores[at] = st->hits[i].score;
            r->first[at] = st->hits[i].first;
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (s != CLS_OK) return s;
    r->start[r->nq] = at;
    r->total = at;
    r->reranked = 1;
    r->scored = 0;
    return CLS_OK;
}
