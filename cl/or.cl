/* or.cl: disjunctive queries (-m or), per-term accumulation (Ding et al.).
 *
 * score_or: one work-group per query with a dense accumulator row of num_docs floats. The
 * group zeroes the row, then adds one term's postings at a time; within a term each docID
 * occurs once, so work-items never collide, and a barrier between terms keeps the reference
 * engine's order of additions (hence bit-identical sums) without atomics. src/algo/or.c
 * launches it; and-or reuses it. */
__kernel __attribute__((reqd_work_group_size(WG_SCORE, 1, 1)))
void score_or(__global const uint *in, uint qinfo_base, uint qterm_base,
              __global const uint *docs, __global const uint *freqs,
              __global const float *norms, uint num_docs, __global float *acc)
{
    uint q = get_group_id(0), lid = get_local_id(0);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    uint nt = qi->num_terms;
    __global float *row = acc + (ulong)q * num_docs;
    for (uint d = lid; d < num_docs; d += WG_SCORE) row[d] = 0.0f;
    if (qi->flags & ABI_QF_EMPTY) return; /* uniform across the group */
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    for (uint t = 0; t < nt; t++) {
        uint off = qt[t].list_offset, len = qt[t].df;
        float w = qt[t].weight;
        for (uint i = lid; i < len; i += WG_SCORE) {
            uint d = docs[off + i];
            if (d < num_docs) row[d] += bm25_contrib(w, freqs[off + i], norms[d]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
