/* Features of (query, candidate document) pairs for a second ranking stage (learning to rank):
 * the table of features, one row each (name, definition, code), and the extractor that computes
 * them for the first stage's top k from the index the first stage read.
 *
 * Per query term t of a query (its distinct known terms, in the batch's order) and document d,
 * six term-level values: tf, idf, bm25 (the engine's own contribution, bm25.h), tf-idf and two
 * smoothed language models (Dirichlet, Jelinek-Mercer); each aggregated over the query's terms
 * as sum, min, max, mean and variance; then the terms covered (count and ratio), the document's
 * length, the query's length, and the index's numeric stored fields as static features.
 * features.c's table defines each precisely; `clsearch features --list` prints it.
 *
 * Bit-exact by construction, so that a device twin computes the same floats: what needs double
 * or libm (idf, the BM25 weight and norm, a term's collection probability) is computed once per
 * term or document in double and rounded once to float, as the engines do; everything per
 * (term, document) is float arithmetic in a fixed order with no contraction, and the logarithm
 * is feat_log below, a fixed sequence of float operations, not libm's.
 *
 * Memory: the extractor holds a collection frequency per term of the index (filled as terms are
 * met) and per-query buffers that only grow (candidates x terms frequencies); no allocation per
 * pair. A term's frequencies for the candidates come from one walk over its list per query,
 * skipping every block whose last docID lies before the next candidate (idx_decode_docs and
 * idx_decode_freqs only for blocks that hold one). */
#ifndef CLS_FEATURES_H
#define CLS_FEATURES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clsearch.h"
#include "index/bm25.h"

/* The parameters of the term-level models. */
typedef struct feat_params {
    float k1, b;   /* BM25, as cls_search_params (default 0.9, 0.4) */
    float mu;      /* Dirichlet smoothing, > 0 (default 2500) */
    float lambda;  /* Jelinek-Mercer: the collection model's share, in (0, 1] (default 0.1) */
} feat_params;

#define FEAT_MU_DEFAULT 2500.0f
#define FEAT_LAMBDA_DEFAULT 0.1f

void feat_params_default(feat_params *p);
/* CLS_OK, or CLS_E_ARG naming the parameter out of its range (k1 0..100, b 0..1, mu above 0
 * up to 1e9, lambda above 0 up to 1). */
cls_status feat_params_check(const feat_params *p);

/* The term-level families, in the order of the table's aggregated rows. */
enum { FEAT_TF, FEAT_IDF, FEAT_BM25, FEAT_TFIDF, FEAT_LM_DIR, FEAT_LM_JM, FEAT_FAMILIES };

/* What a query term brings to every document's values: computed once per query term on the
 * host (double, rounded once to float) and handed to the float arithmetic as bits. */
typedef struct feat_term {
    float idf;    /* bm25_idf(collection documents, collection df) */
    float weight; /* bm25_weight: idf x the term's query weight (an impact index: the query weight) */
    float pc;     /* the collection model: cf / |C| (the index's occurrences of the term over its tokens) */
} feat_term;

/* What a document brings: its length and its BM25 norm at the parameters (bm25_norm at the
 * collection's average length). */
typedef struct feat_doc {
    uint32_t dl;
    float norm;
} feat_doc;

/* The fixed features (the stored fields' come after them). */
#define FEAT_FIXED (FEAT_FAMILIES * 5 + 4)

/* What a row's code reads: one (query, document) pair's term-level values. */
typedef struct feat_pair {
    uint32_t n;                    /* query terms */
    const uint32_t *tf;            /* their n frequencies in the document */
    const float *v[FEAT_FAMILIES]; /* v[f][i]: family f's value of term i (feat_term_values) */
    uint32_t dl;
} feat_pair;

/* One row of the table: a feature, its definition and the code that computes it. */
typedef struct feat_row {
    const char *name;
    const char *definition;
    float (*value)(const feat_pair *p);
} feat_row;

/* The fixed table: FEAT_FIXED rows. */
const feat_row *feat_table(void);

/* ln(x) for x > 0 (normal or subnormal) in float operations only, in this order: x = m 2^e with
 * m in [sqrt(1/2), sqrt(2)); s = (m - 1) / (m + 1); ln m = 2s + 2s s^2 (1/3 + s^2 (1/5 + s^2 (1/7
 * + s^2 / 9))); ln x = e ln2 + ln m. Within a few float ulps of the true logarithm; what matters
 * is that cl/ repeats it operation for operation. x <= 0 gives -FLT_MAX (no input of the table
 * reaches it: the models' arguments are positive). */
static inline float feat_log(float x)
{
    if (!(x > 0.0f)) return -3.40282347e38f;
    int e = 0;
    if (x < 1.17549435e-38f) { /* subnormal: made normal first */
        x = x * 8388608.0f;
        e = -23;
    }
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    e += (int)((u >> 23) & 0xFFu) - 127;
    u = (u & 0x007FFFFFu) | 0x3F800000u;
    float m;
    memcpy(&m, &u, sizeof m);
    if (m > 1.41421354f) {
        m = m * 0.5f;
        e += 1;
    }
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float poly = 0.333333343f + s2 * (0.2f + s2 * (0.142857149f + s2 * 0.111111112f));
    float lnm = 2.0f * s + (2.0f * s) * (s2 * poly);
    return (float)e * 0.693147182f + lnm;
}

/* The six term-level values of term t in a document: tf its frequency there (0: absent). The
 * definitions are the table's (features.c); cl/ repeats this operation for operation. */
static inline void feat_term_values(const feat_term *t, uint32_t tf, const feat_doc *d, cls_scoring scoring,
                                    const feat_params *p, float out[FEAT_FAMILIES])
{
    float f = (float)tf, dl = (float)d->dl;
    out[FEAT_TF] = f;
    out[FEAT_IDF] = t->idf;
    /* the engines' contribution (bm25.h); 0 for an absent term, which the engines add nothing for */
    out[FEAT_BM25] = tf == 0 ? 0.0f : score_contrib(scoring, t->weight, tf, d->norm);
    out[FEAT_TFIDF] = f * t->idf;
    out[FEAT_LM_DIR] = feat_log((f + p->mu * t->pc) / (dl + p->mu));
    float ml = d->dl == 0 ? 0.0f : f / dl;
    out[FEAT_LM_JM] = feat_log((1.0f - p->lambda) * ml + p->lambda * t->pc);
}

/* Every fixed feature of one pair into out[0 .. FEAT_FIXED): the n terms' values, then the
 * table's rows in order. scratch holds FEAT_FAMILIES x n floats. */
void feat_pair_compute(const feat_term *terms, const uint32_t *tf, uint32_t n, const feat_doc *d, cls_scoring scoring,
                       const feat_params *p, float *scratch, float *out);

/* ---- a batch of pairs, for the device twin (cl/features.cl) ---------------------------------- */

/* Pairs of several queries: query q's terms are terms[term_start[q] .. + num_terms[q]); pair j
 * is of query pair_query[j], its frequencies tf[tf_start[j] .. + num_terms of its query), its
 * document docs[j]. */
typedef struct feat_batch {
    const feat_term *terms;
    const uint32_t *term_start, *num_terms;
    uint32_t nq;
    size_t nterms;
    const uint32_t *pair_query, *tf_start;
    const feat_doc *docs;
    uint32_t npairs;
    const uint32_t *tf;
    size_t ntf;
    cls_scoring scoring;
    feat_params p;
} feat_batch;

/* CLS_OK when every index of b stays within its arrays (a query's terms, a pair's query and
 * frequencies), else CLS_E_ARG saying which does not. */
cls_status feat_batch_check(const feat_batch *b);
/* The fixed features of every pair of b (checked) into out: npairs rows of FEAT_FIXED, in plain C
 * (feat_pair_compute); scratch holds FEAT_FAMILIES floats per term of the longest query. */
void feat_batch_compute(const feat_batch *b, float *scratch, float *out);

/* The device twin: an OpenCL device's context and the features program. */
typedef struct feat_cl feat_cl;
/* On the device spec (clx_select: "cpu", "gpu", "P:D", ...), for an index of this scoring. */
cls_status feat_cl_create(const char *device, cls_scoring scoring, feat_cl **out);
void feat_cl_free(feat_cl *c);
/* Whether the device rounds division correctly: then feat_cl_compute equals feat_batch_compute
 * bit for bit (else a division may differ in its last bit). */
int feat_cl_exact(const feat_cl *c);
/* feat_batch_compute on the device (b->scoring must be the one c was built for). */
cls_status feat_cl_compute(feat_cl *c, const feat_batch *b, float *out);

/* ---- the extractor ---------------------------------------------------------------------------- */

typedef struct feat_extractor feat_extractor;

/* An extractor on idx (kept: close idx after it) at p (checked). Verifies the postings words
 * (idx_verify_words, once per index) and finds the numeric stored fields: a field is a feature
 * when some document has it and every value present reads whole as a finite decimal number. */
cls_status feat_create(const cls_index *idx, const feat_params *p, feat_extractor **out);
void feat_free(feat_extractor *x);
/* The term-level models' parameters from now on (checked): a second stage follows each search's
 * k1 and b. */
cls_status feat_set_params(feat_extractor *x, const feat_params *p);
/* The features: FEAT_FIXED plus the numeric stored fields, and feature i's name and definition
 * (NULL past the end). */
uint32_t feat_count(const feat_extractor *x);
const char *feat_name(const feat_extractor *x, uint32_t i);
const char *feat_definition(const feat_extractor *x, uint32_t i);

/* The features of query qi of batch b (built on the extractor's index) for the documents
 * docs[0 .. n) (docIDs of the index, any order; the first stage's top k in rank order), into
 * out: n rows of feat_count values, row j for docs[j]. A docID out of range is CLS_E_ARG; a
 * block that does not decode, CLS_E_CORRUPT. */
cls_status feat_query(feat_extractor *x, const cls_batch *b, size_t qi, const uint32_t *docs, uint32_t n, float *out);

/* What feat_query computes from, for a device to compute the rows (feat_batch, feat_cl_compute):
 * the query's num_terms terms into terms, pair j's (docs[j]'s) frequencies into tf[j * num_terms
 * ..), its document into d[j], its numeric stored fields' values into fields[j * (feat_count -
 * FEAT_FIXED) ..]. The same walk as feat_query's, so that the device's rows equal its rows. */
cls_status feat_query_pairs(feat_extractor *x, const cls_batch *b, size_t qi, const uint32_t *docs, uint32_t n,
                            feat_term *terms, uint32_t *tf, feat_doc *d, float *fields);

/* Query qi's num_terms terms into terms, as feat_query_pairs gives them: for a device that finds
 * the candidates' frequencies itself (the engine's second stage, src/engine/dev_rerank.c). A
 * term met for the first time has its collection frequency summed by a walk of its list. */
cls_status feat_query_terms(feat_extractor *x, const cls_batch *b, size_t qi, feat_term *terms);
/* Document doc's numeric stored fields' values (feat_count - FEAT_FIXED of them) into out, as
 * feat_query's rows hold them: for a device that keeps every document's fields (the engine's
 * second stage, src/engine/dev_rerank.c). doc must be below the index's documents. */
void feat_doc_fields(const feat_extractor *x, uint32_t doc, float *out);

/* ---- relevance judgements --------------------------------------------------------------------- */

/* TREC qrels ("qid iteration docno relevance" a line, white-space separated, the relevance a
 * whole number), looked up by (qid, docno). */
typedef struct feat_qrels feat_qrels;
/* Reads path: CLS_E_IO when it cannot be read, CLS_E_FORMAT naming the line that is not a
 * judgement or that judges a pair judged before. A file of no judgement is CLS_E_FORMAT too. */
cls_status feat_qrels_read(const char *path, feat_qrels **out);
void feat_qrels_free(feat_qrels *q);
/* The relevance of docno for qid into *label, 0 when unjudged; *judged (when not NULL) says
 * which. A lookup writes q's scratch key: one thread at a time. */
cls_status feat_qrels_label(feat_qrels *q, const char *qid, const char *docno, int *label, int *judged);
/* The judgements read. */
size_t feat_qrels_count(const feat_qrels *q);

#endif
