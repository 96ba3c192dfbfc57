/* Query batches (analysed) and result sets: what every engine reads and writes. */
#ifndef CLS_BATCH_H
#define CLS_BATCH_H

#include <stdint.h>

#include "analysis/an.h"
#include "clsearch.h"

typedef struct batch_term {
    uint32_t term; /* term id in the index */
    float weight;  /* query weight: the sum of its occurrences' weights (1 unless term^w) */
} batch_term;

typedef struct batch_query {
    uint64_t qid_off;    /* into the qid arena */
    uint64_t term_start; /* into terms[] */
    uint32_t num_terms;  /* distinct known terms, in order of first appearance */
    uint32_t unknown;    /* analysed terms the index lacks, or a shard holds in none of its documents
                          * (AND queries with any match nothing) */
} batch_query;

struct cls_batch {
    const cls_index *idx;
    an_analyzer *an;
    batch_query *q;
    uint64_t nq;
    size_t q_cap;
    batch_term *terms;
    uint64_t nterms;
    size_t terms_cap;
    char *qids;
    uint64_t qids_len;
    size_t qids_cap;
};

struct cls_results {
    uint64_t nq;
    size_t cap_q;
    uint64_t *start; /* nq + 1 */
    uint32_t *docs;
    float *scores;
    uint64_t total;
    size_t cap_total;
    /* a second ranking stage's (engine/rerank.h): the first stage's scores of the hits, and
     * whether the results are reranked (results_reset clears it) */
    float *first;
    size_t cap_first;
    int reranked;
    /* an executor that scored the candidates itself (the device executor, on its device): each
     * hit's model score, in the hits' order, for the stage to rank by (results_reset clears it) */
    float *model;
    size_t cap_model;
    int scored;
};

/* The postings of the lists of query q (its known terms' documents in the batch's index). */
uint64_t batch_query_postings(const cls_batch *b, uint64_t q);
/* The same summed over the queries order[0..n) (order NULL: 0 .. n - 1). */
uint64_t batch_postings(const cls_batch *b, const uint32_t *order, uint64_t n);

/* Ding et al.'s per-query cost features of the queries order[0..n) (order NULL: 0 .. n - 1),
 * each summed over them: the queries, their lists' postings, each query's shortest list and its
 * second shortest (0 where it has fewer lists; an unknown term's list is empty), its terms. */
enum { BATCH_COST_QUERIES, BATCH_COST_POSTINGS, BATCH_COST_SHORTEST, BATCH_COST_SECOND, BATCH_COST_TERMS,
       BATCH_COST_FEATURES };
void batch_cost_features(const cls_batch *b, const uint32_t *order, uint64_t n, double f[BATCH_COST_FEATURES]);

/* Makes room for nq queries with up to total hits; sets nq and start[0] = 0. */
cls_status results_reset(cls_results *r, uint64_t nq, uint64_t total);
/* Packs results written a query at a time at q * kk (their counts in start[q + 1]) into order. */
void results_pack(cls_results *r, uint32_t kk);

/* Order of hits: higher score first, then smaller docID. */
static inline int hit_before(float sa, uint32_t da, float sb, uint32_t db)
{
    return sa > sb || (sa == sb && da < db);
}

#endif
