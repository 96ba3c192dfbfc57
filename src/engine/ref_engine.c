/* The reference engine: plain C, one query at a time, written to be obviously right. It is
 * the oracle every OpenCL kernel is tested against, so it shares only the arithmetic
 * (bm25_contrib, bm25_weight, bm25_norms) and the hit order (hit_before) with the device
 * path, never its algorithms.
 *
 * The postings are verified as the engine is created (their checksum: idx_verify_words) and
 * every block again as it is decoded (the strict decoders): a stream that does not decode fails
 * the search with CLS_E_CORRUPT naming its term and block.
 *
 * Per query: decode every block of every term with the reference decoder; add each term's
 * contributions into a dense per-document accumulator in query-term order and count how many
 * terms hold each document; the query algorithm's reference twin (src/algo/<mode>.c) picks the
 * matches from that; sort (tier desc, score desc, docID asc) and keep k. */
#include <stdlib.h>
#include <string.h>

#include "index/bm25.h"
#include "algo/algo.h"
#include "engine/engine.h"
#include "util/err.h"

struct ref_engine {
    const cls_index *idx;
    float *norms, k1, b;
    float *acc;
    uint32_t *count;
    uint32_t *docs, *freqs; /* one decoded list */
    ref_hit *hits; /* one query's matches */
};

cls_status ref_create(const cls_index *idx, ref_engine **out)
{
    cls_status s = idx_verify_words(idx);
    if (s != CLS_OK) return s;
    ref_engine *e = calloc(1, sizeof *e);
    size_t n = (size_t)idx->num_docs + 1;
    if (e) {
        e->idx = idx;
        e->norms = malloc(n * sizeof *e->norms);
        e->acc = calloc(n, sizeof *e->acc);
        e->count = calloc(n, sizeof *e->count);
        e->docs = malloc(n * sizeof *e->docs + IDX_MAX_BLOCK * 4);
        e->freqs = malloc(n * sizeof *e->freqs + IDX_MAX_BLOCK * 4);
        e->hits = malloc(n * sizeof *e->hits);
        e->k1 = e->b = -1;
    }
    if (!e || !e->norms || !e->acc || !e->count || !e->docs || !e->freqs || !e->hits) {
        ref_free(e);
        return err_set(CLS_E_NOMEM, "reference engine: out of memory for %u documents", idx->num_docs);
    }
    *out = e;
    return CLS_OK;
}

void ref_free(ref_engine *e)
{
    if (!e) return;
    free(e->norms);
    free(e->acc);
    free(e->count);
    free(e->docs);
    free(e->freqs);
    free(e->hits);
    free(e);
}


static int cmp_hit(const void *a, const void *b)
{
    const ref_hit *x = a, *y = b;
    if (x->tier != y->tier) return x->tier > y->tier ? -1 : 1;
    return hit_before(x->s, x->d, y->s, y->d) ? -1 : hit_before(y->s, y->d, x->s, x->d) ? 1 : 0;
}

cls_status ref_search(ref_engine *e, const cls_batch *bt, const cls_search_params *p, cls_results *r)
{
    const cls_index *idx = e->idx;
    const query_algo *algo = query_algo_for((int)p->mode);
    uint32_t N = idx->num_docs;
    if (e->k1 != p->k1 || e->b != p->b) {
        bm25_norms(idx, p->k1, p->b, e->norms);
        e->k1 = p->k1;
        e->b = p->b;
    }
    cls_status s = results_reset(r, bt->nq, bt->nq * (uint64_t)(p->k < N ? p->k : N));
    if (s != CLS_OK) return s;
    for (uint64_t qi = 0; qi < bt->nq; qi++) {
        const batch_query *q = &bt->q[qi];
        const batch_term *qt = bt->terms + q->term_start;
        algo_need need;
        algo->need(NULL, &(algo_query){.q = q}, &need);
        uint32_t nmatch = 0;
        if (!(need.flags & ABI_QF_EMPTY)) {
            memset(e->acc, 0, (size_t)N * sizeof *e->acc);
            memset(e->count, 0, (size_t)N * sizeof *e->count);
            for (uint32_t i = 0; i < q->num_terms; i++) {
                float w = bm25_weight(idx, qt[i].term, qt[i].weight);
                uint32_t n;
                if ((s = idx_decode_list(idx, qt[i].term, e->docs, e->freqs, &n)) != CLS_OK) return s;
                for (uint32_t j = 0; j < n; j++) {
                    uint32_t d = e->docs[j]; /* < N: idx_decode_block checked */
                    e->acc[d] += score_contrib(idx->scoring, w, e->freqs[j], e->norms[d]);
                    e->count[d]++;
                }
            }
            ref_query rq = {.q = q, .num_docs = N, .acc = e->acc, .count = e->count};
            nmatch = algo->ref(&rq, e->hits);
            qsort(e->hits, nmatch, sizeof *e->hits, cmp_hit);
        }
        uint32_t keep = nmatch < p->k ? nmatch : p->k;
        uint64_t at = r->start[qi];
        for (uint32_t j = 0; j < keep; j++) {
            r->docs[at + j] = e->hits[j].d;
            r->scores[at + j] = e->hits[j].s;
        }
        r->start[qi + 1] = at + keep;
    }
    r->total = r->start[bt->nq];
    return CLS_OK;
}
