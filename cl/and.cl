/* and.cl: conjunctive queries (-m and): the documents holding every term of the query, scored
 * by BM25. src/query/and.c launches intersect_and then score_and; and-or reuses intersect_and.
 *
 * intersect_and: one work-group per query, as in Wu et al.'s batched intersection: the group walks the
 * query's shortest decoded list in chunks of WG_INTERSECT; each work-item binary-searches its
 * docID in every other list of the query, and a work-group prefix sum over the match flags
 * compacts the survivors, in docID order, to cand[cand_offset ...]. ncand[q] receives the
 * count. The host sized cand from the data: each query owns room for its shortest list. A query
 * flagged ABI_QF_EMPTY or ABI_QF_UNKNOWN_TERM has no candidates.
 *
 * score_and: one work-group per query; each candidate docID is looked up (binary search) in every
 * term's decoded list, in query-term order, and its contributions summed from 0 in that order,
 * exactly as the reference engine adds them. */
__kernel __attribute__((reqd_work_group_size(WG_INTERSECT, 1, 1)))
void intersect_and(__global const uint *in, uint qinfo_base, uint qterm_base,
                   __global const uint *docs, __global uint *cand, __global uint *ncand)
{
    __local uint scan[WG_INTERSECT];
    uint q = get_group_id(0), lid = get_local_id(0);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    uint nt = qi->num_terms, coff = qi->cand_offset;
    if (nt == 0 || (qi->flags & (ABI_QF_EMPTY | ABI_QF_UNKNOWN_TERM))) {
        if (lid == 0) ncand[q] = 0;
        return;
    }
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    uint shortest = 0;
    for (uint t = 1; t < nt; t++)
        if (qt[t].df < qt[shortest].df) shortest = t;
    uint soff = qt[shortest].list_offset, slen = qt[shortest].df;
    uint count = 0;
    for (uint base = 0; base < slen; base += WG_INTERSECT) { /* uniform trip count */
        uint i = base + lid, match = 0, d = 0;
        if (i < slen) {
            d = docs[soff + i];
            match = 1;
            for (uint t = 0; t < nt && match; t++) {
                if (t == shortest) continue;
                uint off = qt[t].list_offset, len = qt[t].df;
                uint p = lower_bound(docs + off, len, d);
                match = p < len && docs[off + p] == d;
            }
        }
        uint total;
        uint pos = wg_scan_incl(scan, match, &total);
        if (match) cand[coff + count + pos - 1] = d;
        count += total;
    }
    if (lid == 0) ncand[q] = count;
}

__kernel __attribute__((reqd_work_group_size(WG_SCORE, 1, 1)))
void score_and(__global const uint *in, uint qinfo_base, uint qterm_base,
               __global const uint *docs, __global const uint *freqs,
               __global const float *norms, __global const uint *cand,
               __global const uint *ncand, __global float *cscore)
{
    uint q = get_group_id(0), lid = get_local_id(0);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    uint nt = qi->num_terms, coff = qi->cand_offset;
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    uint n = ncand[q];
    for (uint i = lid; i < n; i += WG_SCORE) {
        uint d = cand[coff + i];
        float s = 0.0f;
        for (uint t = 0; t < nt; t++) {
            uint off = qt[t].list_offset, len = qt[t].df;
            /* found (p < len) on valid lists; the clamp keeps a forged, unsorted one in bounds */
            uint p = min(lower_bound(docs + off, len, d), len - 1);
            s += bm25_contrib(qt[t].weight, freqs[off + p], norms[d]);
        }
        cscore[coff + i] = s;
    }
}
