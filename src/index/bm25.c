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
    double N = x->num_docs, df = x->terms[term].df;
    return (float)(log(1.0 + (N - df + 0.5) / (df + 0.5)) * qweight);
}

void bm25_norms(const cls_index *x, float k1, float b, float *out)
{
    double avg = x->avg_doc_len > 0 ? x->avg_doc_len : 1.0;
    for (uint32_t d = 0; d < x->num_docs; d++) out[d] = bm25_norm(k1, b, x->doclen[d], avg);
}
