/* rerank.cl: the second ranking stage as a stage of the device executor's batch, after top-k,
 * reading the batch's top-k output (cl/abi.h: ABI_OUT_*) where it lies: each query's candidates
 * are its kk hits there. Per chunk of the batch's queries (the host bounds the rows a chunk
 * makes), in order on the engine's queue:
 *
 *   rerank_tf      each (candidate, query term) pair's frequency, from the index's blocks on the
 *                  device: a work-group a pair binary-searches the term's blocks by their last
 *                  docID, decodes the one block that may hold the candidate with the codec's
 *                  device decoder (decode.cl's decode_block: this file is built after the codec's
 *                  fragment and decode.cl) and finds the docID; 0 where the list lacks it
 *   features_rows  (cl/features.cl) the candidates' rows in the layout cl/trees.cl reads
 *   trees_score    (cl/trees.cl, through src/rank/rank_dev.c) their model scores
 *   rerank_order   each query's candidates ordered by (model score desc, docID asc), the order of
 *                  the host's stage (src/engine/rerank.c), and its first k kept with their
 *                  first-stage scores (ABI_RR_*)
 *
 * rerank_order ranks by counting: a candidate's place is the number of its query's candidates
 * that come before it, compared in tiles through local memory. A query's docIDs are distinct, so
 * the order is total and the places are a permutation, whatever the scores' ties; the model's
 * scores are sums of finite leaves, so no NaN breaks the comparison. It reads each query's n
 * candidates n times, which for the depths of a second stage (hundreds to a few thousand) costs
 * less than the trees do, and it needs no sort network and no scratch beyond two tiles. */

#ifndef WG_RERANK
#define WG_RERANK 128 /* work-items of rerank_order's group (a query) */
#endif

/* Group g: the pair (candidate g % kk, term t0 + g / kk) of the queries [the chunk); tf written
 * at kk * (term_start - t0) + r * num_terms + i, as features_rows reads it. */
__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1))) void
rerank_tf(__global const uint *words, uint nwords, __global const idx_block *blocks, __global const uint *out, uint nq,
          uint kk, __global const abi_rerank_query *queries, __global const abi_rerank_term *terms, uint t0,
          __global uint *tf)
{
    __local uint vals[BLOCK_SIZE];
    __local uint scan[BLOCK_SIZE];
    __local uint scratch[DECODE_SCRATCH];
    __local uint found[1];
    uint g = get_group_id(0), lid = get_local_id(0);
    uint ti = t0 + g / kk, r = g % kk;
    abi_rerank_term t = terms[ti];
    uint hits = out[t.query];
    if (r >= hits) return; /* uniform: past the query's hits */
    abi_rerank_query qr = queries[t.query];
    uint doc = out[ABI_OUT_DOC(nq, kk, t.query, r)];
    size_t at = (size_t)kk * (qr.term_start - t0) + (size_t)r * qr.num_terms + (ti - qr.term_start);
    /* the first block whose last docID reaches doc: the only one that may hold it */
    uint lo = t.first_block, end = t.first_block + t.num_blocks, hi = end;
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2;
        if (blocks[mid].last < doc) lo = mid + 1;
        else hi = mid;
    }
    /* a candidate between the list's blocks or past them has none; its group decodes the block
     * anyway rather than return: a return that depends on the search's loop, ahead of the
     * decoder's barriers, is what POCL's kernel compiler gets wrong (the group's later code never
     * runs), while one on a value read straight from memory, as above, it handles */
    uint have = lo < end && blocks[lo].first <= doc;
    if (lid == 0) found[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint d, f, n = decode_block(words, nwords, blocks + min(lo, end - 1), vals, scan, scratch, &d, &f);
    if (have && lid < n && d == doc) found[0] = f; /* one posting at most: a block's docIDs are distinct */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) tf[at] = found[0];
}

/* Group g: query q0 + g of the batch, its candidates' model scores at model[g * kk ..]; its
 * first min(hits, k) in model order into res (ABI_RR_*, nq queries of k). */
__kernel __attribute__((reqd_work_group_size(WG_RERANK, 1, 1))) void
rerank_order(__global const uint *out, uint nq, uint kk, uint k, uint q0, __global const float *model,
             __global uint *res)
{
    __local float ls[WG_RERANK];
    __local uint ld[WG_RERANK];
    uint g = get_group_id(0), q = q0 + g, lid = get_local_id(0);
    uint n = out[q];
    __global const float *sc = model + (size_t)g * kk;
    if (lid == 0) res[q] = min(n, k);
    for (uint j0 = 0; j0 < n; j0 += WG_RERANK) {
        uint j = j0 + lid;
        float s = j < n ? sc[j] : 0.0f;
        uint d = j < n ? out[ABI_OUT_DOC(nq, kk, q, j)] : 0, place = 0;
        for (uint l0 = 0; l0 < n; l0 += WG_RERANK) {
            barrier(CLK_LOCAL_MEM_FENCE); /* the tile before is read */
            if (l0 + lid < n) {
                ls[lid] = sc[l0 + lid];
                ld[lid] = out[ABI_OUT_DOC(nq, kk, q, l0 + lid)];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            uint m = min((uint)WG_RERANK, n - l0);
            for (uint l = 0; l < m; l++) place += ls[l] > s || (ls[l] == s && ld[l] < d);
        }
        if (j < n && place < k) {
            res[ABI_RR_DOC(nq, k, q, place)] = d;
            res[ABI_RR_MODEL(nq, k, q, place)] = as_uint(s);
            res[ABI_RR_FIRST(nq, k, q, place)] = out[ABI_OUT_SCORE(nq, kk, q, j)];
        }
    }
}
