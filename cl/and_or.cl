/* and_or.cl: AND, completed by OR (-m and-or; Ding et al.'s AND-then-OR). The documents holding
 * every term come first, ranked by score; when there are fewer than k of them, the best of the
 * other documents that hold any term follow, ranked by score.
 *
 * src/algo/and_or.c runs intersect_and (and.cl: the documents holding every term) and score_or
 * (or.cl: every document's BM25 sum in a dense row), then mark_and, one work-group per work unit
 * (abi_unit), which sets ABI_KEY_TIER (cl/abi.h) in the row's key of each document holding every
 * term. topk_select then ranks
 * tier first, score second, docID third, in one pass, and writes the scores without the tier
 * bit. A query with an unknown term (ABI_QF_UNKNOWN_TERM) has no candidates: all its results
 * come from OR. */
__kernel __attribute__((reqd_work_group_size(WG_SCORE, 1, 1)))
void mark_and(__global const uint *in, uint qinfo_base, uint units_base, __global const uint *cand,
              __global const uint *ucount, uint num_docs, __global uint *acc)
{
    uint g = get_group_id(0), lid = get_local_id(0);
    __global const abi_unit *u = UNITS_AT(in, units_base, g);
    uint coff = QUERY_AT(in, qinfo_base, u->query)->cand_offset + u->begin, n = ucount[g];
    __global uint *row = acc + (ulong)u->query * num_docs;
    for (uint i = lid; i < n; i += WG_SCORE) row[cand[coff + i]] |= ABI_KEY_TIER;
}
