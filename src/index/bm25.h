/* BM25 as clsearch computes it everywhere: the reference engine, the OpenCL engine's host side
 * (query weights, per-document norms), and the index writer and reader (each block's max_score
 * at IDX_SCORE_K1, IDX_SCORE_B). Scores must be bit-identical between the reference engine and
 * the device, so these are the exact operations in their exact order: the weight and the norms
 * in double, each rounded once to float; a term's contribution in float. cl/common.cl repeats
 * bm25_contrib for the kernels, operation for operation.
 *
 * An impact index (cls_scoring) scores a posting w * (float)tf instead, w the query weight alone
 * (no idf): impact_contrib, which the kernels' bm25_contrib becomes under -DSCORE_IMPACT=1
 * (idx_score_option). Its blocks' max_score is the largest contribution at weight 1.
 */
#ifndef CLS_BM25_H
#define CLS_BM25_H

#include <stdint.h>

#include "clsearch.h"

/* The BM25 parameters of the blocks' max_score (the engines' defaults). */
#define IDX_SCORE_K1 0.9f
#define IDX_SCORE_B 0.4f

/* One posting's contribution: (w * f) / (f + norm) in float, f = (float)tf. */
static inline float bm25_contrib(float w, uint32_t tf, float norm)
{
    float f = (float)tf;
    return (w * f) / (f + norm);
}

/* One posting's contribution in an impact index: w * f in float, f = (float)tf the impact. */
static inline float impact_contrib(float w, uint32_t tf)
{
    return w * (float)tf;
}

/* One posting's contribution as an index of this scoring computes it (norm unused for impact). */
static inline float score_contrib(cls_scoring scoring, float w, uint32_t tf, float norm)
{
    return scoring == CLS_SCORING_IMPACT ? impact_contrib(w, tf) : bm25_contrib(w, tf, norm);
}

/* k1 * (1 - b + b * dl / avgdl), in double, rounded once to float. */
static inline float bm25_norm(float k1, float b, uint32_t dl, double avgdl)
{
    return (float)(k1 * (1.0 - b + b * (double)dl / avgdl));
}

/* Lucene's idf: log(1 + (N - df + 0.5) / (df + 0.5)), in double, rounded once to float. */
float bm25_idf(uint32_t num_docs, uint32_t df);
/* Every function below that takes the index scores with its collection's statistics
 * (cls_index's coll_docs, coll_avg_doc_len, idx_coll_df): a shard's documents score as in the
 * whole index. */
/* Lucene's idf times the query weight (the sum of the term's weights in the query: 1 an
 * occurrence unless term^w says otherwise), in double, rounded once to float; for an impact
 * index the query weight alone, rounded to float. */
float bm25_weight(const cls_index *idx, uint32_t term, double qweight);
/* The weight of term's block max_score: its idf (BM25) or 1 (impact). */
float bm25_block_weight(cls_scoring scoring, uint32_t num_docs, uint32_t df);
/* bm25_norm for every document of idx into out, at the collection's average length (1 for an
 * empty collection). */
void bm25_norms(const cls_index *idx, float k1, float b, float *out);

#endif
