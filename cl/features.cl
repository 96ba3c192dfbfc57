/* features.cl: the learning-to-rank features of a batch of (query, candidate) pairs, the device
 * twin of src/rank/features.c (feat_batch_compute), equal to it bit for bit.
 *
 * One work-item a pair. The host hands over what needs double or libm already rounded to float
 * (each query term's idf, BM25 weight and collection probability; each pair's document length
 * and BM25 norm) and every pair's term frequencies; the kernel does the float arithmetic of the
 * table in the table's order: a first pass over the query's terms computes each term's six
 * values (feat_term_values) and sums them, keeping the least and greatest; a second pass
 * computes the same values again for the variance around the mean, rather than holding them in
 * private memory (queries have any number of terms). Sums start from 0 in query-term order, the
 * logarithm is feat_log's float sequence, no contraction (common.cl), and the host builds with
 * correctly rounded division where the device has it, so each operation rounds as in C.
 *
 * Two entries share that arithmetic (feat_pair_fixed): features_pairs, for pairs the host
 * gathered (features_cl.c, `clsearch features -d`), and features_rows, a stage of the device
 * executor's batch (src/engine/dev_rerank.c, cl/rerank.cl), which reads the candidates where
 * top-k left them and writes the rows straight into the layout cl/trees.cl reads.
 *
 * features_pairs' layouts (host: features_cl.c): terms, 3 floats a term (idf, weight, pc:
 * feat_term), every query's terms from term_start[q], num_terms[q] of them; pair j: its query
 * pair_query[j], its frequencies tf[tf_start[j] ..], its document as 2 words (dl, norm's bits:
 * feat_doc); out: FEAT_FIXED floats a pair, the table's rows in order. features_rows' are at
 * the kernel. */

#define FEAT_FAMILIES 6
#define FEAT_FIXED (FEAT_FAMILIES * 5 + 4)
#ifndef WG_FEATURES
#define WG_FEATURES 64 /* work-items (pairs) per work-group */
#endif

/* src/rank/features.h: feat_log, operation for operation. */
inline float feat_log(float x)
{
    if (!(x > 0.0f)) return -3.40282347e38f;
    int e = 0;
    if (x < 1.17549435e-38f) {
        x = x * 8388608.0f;
        e = -23;
    }
    uint u = as_uint(x);
    e += (int)((u >> 23) & 0xFFu) - 127;
    u = (u & 0x007FFFFFu) | 0x3F800000u;
    float m = as_float(u);
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

/* src/rank/features.h: feat_term_values (tf, idf, bm25, tfidf, lm_dir, lm_jm). */
inline void feat_term_values(__global const float *t, uint tf, uint dl, float norm, float mu, float lambda, float *v)
{
    float f = (float)tf, dlf = (float)dl, idf = t[0], weight = t[1], pc = t[2];
    v[0] = f;
    v[1] = idf;
    v[2] = tf == 0 ? 0.0f : bm25_contrib(weight, tf, norm);
    v[3] = f * idf;
    v[4] = feat_log((f + mu * pc) / (dlf + mu));
    float ml = dl == 0 ? 0.0f : f / dlf;
    v[5] = feat_log((1.0f - lambda) * ml + lambda * pc);
}

/* One pair's FEAT_FIXED features into o: the query's n terms from t (tstride floats a term, its
 * idf, weight and pc first), their frequencies in the document tf[0 .. n), the document's length
 * dl and BM25 norm. */
inline void feat_pair_fixed(__global const float *t, uint tstride, uint n, __global const uint *tf, uint dl,
                            float norm, float mu, float lambda, __global float *o)
{
    float v[FEAT_FAMILIES], sum[FEAT_FAMILIES], lo[FEAT_FAMILIES], hi[FEAT_FAMILIES], mean[FEAT_FAMILIES],
        var[FEAT_FAMILIES];
    for (int f = 0; f < FEAT_FAMILIES; f++) sum[f] = lo[f] = hi[f] = var[f] = 0.0f;
    uint covered = 0;
    for (uint i = 0; i < n; i++) {
        uint c = tf[i];
        feat_term_values(t + (size_t)tstride * i, c, dl, norm, mu, lambda, v);
        covered += c > 0;
        for (int f = 0; f < FEAT_FAMILIES; f++) {
            sum[f] = sum[f] + v[f];
            if (i == 0 || v[f] < lo[f]) lo[f] = v[f];
            if (i == 0 || v[f] > hi[f]) hi[f] = v[f];
        }
    }
    for (int f = 0; f < FEAT_FAMILIES; f++) mean[f] = n ? sum[f] / (float)n : 0.0f;
    for (uint i = 0; i < n; i++) {
        feat_term_values(t + (size_t)tstride * i, tf[i], dl, norm, mu, lambda, v);
        for (int f = 0; f < FEAT_FAMILIES; f++) {
            float d = v[f] - mean[f];
            var[f] = var[f] + d * d;
        }
    }
    for (int f = 0; f < FEAT_FAMILIES; f++) {
        o[5 * f] = sum[f];
        o[5 * f + 1] = lo[f];
        o[5 * f + 2] = hi[f];
        o[5 * f + 3] = mean[f];
        o[5 * f + 4] = n ? var[f] / (float)n : 0.0f;
    }
    o[5 * FEAT_FAMILIES] = (float)covered;
    o[5 * FEAT_FAMILIES + 1] = n ? (float)covered / (float)n : 0.0f;
    o[5 * FEAT_FAMILIES + 2] = (float)dl;
    o[5 * FEAT_FAMILIES + 3] = (float)n;
}

__kernel __attribute__((reqd_work_group_size(WG_FEATURES, 1, 1))) void
features_pairs(__global const float *terms, __global const uint *term_start, __global const uint *num_terms,
               __global const uint *pair_query, __global const uint *tf_start, __global const uint *docs,
               __global const uint *tf, const uint npairs, const float mu, const float lambda, __global float *out)
{
    uint j = get_global_id(0);
    if (j >= npairs) return;
    uint q = pair_query[j];
    feat_pair_fixed(terms + 3 * (size_t)term_start[q], 3, num_terms[q], tf + tf_start[j], docs[2 * j],
                    as_float(docs[2 * j + 1]), mu, lambda, out + (size_t)j * FEAT_FIXED);
}

/* The second ranking stage in a device batch (cl/rerank.cl has the rest): the row the tree
 * ensemble reads (cl/trees.cl: stride floats, feature i at column i + 1, column 0 the model's
 * absent value) of every candidate slot of the queries [q0, q0 + nqc) of the batch's top-k output
 * (nq queries of kk slots), work-item s the slot (query q0 + s / kk, rank s % kk), its row at
 * rows + s * stride; slots past a query's hits are left as they are. tf holds what rerank_tf
 * found: query q's candidate r's frequency of its term i at kk * (term_start - t0) + r *
 * num_terms + i. The document's length, BM25 norm (at the search's k1 and b) and numeric stored
 * fields (nfields floats a document) come from the engine's copies on the device. */
__kernel __attribute__((reqd_work_group_size(WG_FEATURES, 1, 1))) void
features_rows(__global const uint *out, uint nq, uint kk, uint q0, uint nqc, __global const abi_rerank_query *queries,
              __global const abi_rerank_term *terms, uint t0, __global const uint *tf, __global const uint *doclen,
              __global const float *norms, __global const float *fields, uint nfields, const float mu,
              const float lambda, uint absent_bits, uint stride, __global float *rows)
{
    uint s = get_global_id(0);
    if (s >= nqc * kk) return;
    uint q = q0 + s / kk, r = s % kk;
    if (r >= out[q]) return;
    uint doc = out[ABI_OUT_DOC(nq, kk, q, r)];
    abi_rerank_query qr = queries[q];
    __global float *row = rows + (size_t)s * stride;
    row[0] = as_float(absent_bits);
    feat_pair_fixed((__global const float *)(terms + qr.term_start), sizeof(abi_rerank_term) / 4, qr.num_terms,
                    tf + (size_t)kk * (qr.term_start - t0) + (size_t)r * qr.num_terms, doclen[doc], norms[doc], mu,
                    lambda, row + 1);
    for (uint f = 0; f < nfields; f++) row[1 + FEAT_FIXED + f] = fields[(size_t)doc * nfields + f];
}
