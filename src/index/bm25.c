/* BM25 (bm25.h): the parts that read the index. */
#include "index/bm25.h"

#include <math.h>

#include "index/index.h"

float bm25_idf(uint32_t num_docs, uint32_t df)
{
    double N = num_docs, d = df;
    return (float)log(1.0 + (N - d + 0.5) / (d + 0.5));
}

float bm25_weight(const cls_index *x, uint32_t term, double qweight)
{
    if (x->scoring == CLS_SCORING_IMPACT) return (float)qweight;
    double N = x->coll_docs, df = idx_coll_df(x, term); /* the collection's: a shard scores as its whole index */
    return (float)(log(1.0 + (N - df + 0.5) / (df + 0.5)) * qweight);
}

void bm25_norms(const cls_index *x, float k1, float b, float *out)
{
    double avg = x->coll_avg_doc_len > 0 ? x->coll_avg_doc_len : 1.0; /* the collection's, as the idf */
    for (uint32_t d = 0; d < x->num_docs; d++) out[d] = bm25_norm(k1, b, x->doclen[d], avg);
}

float bm25_block_weight(cls_scoring scoring, uint32_t num_docs, uint32_t df)
{
    return scoring == CLS_SCORING_IMPACT ? 1.0f : bm25_idf(num_docs, df);
}

int idx_bounds_valid(const cls_index *x, float k1, float b)
{
    /* an impact's contribution does not depend on k1 and b; BM25's max_score holds at the
     * header's only */
    return x->scoring == CLS_SCORING_IMPACT || (k1 == x->score_k1 && b == x->score_b);
}

const char *idx_score_option(const cls_index *x)
{
    return x->scoring == CLS_SCORING_IMPACT ? " -DSCORE_IMPACT=1" : "";
}

const char *cls_scoring_name(cls_scoring s)
{
    switch (s) {
    case CLS_SCORING_BM25: return "bm25";
    case CLS_SCORING_IMPACT: return "impact";
    }
    return NULL;
}

cls_scoring cls_index_scoring(const cls_index *x) { return x ? x->scoring : CLS_SCORING_BM25; }
