/* score_and.cl: BM25 of given AND candidates alone, for `clsearch bench score` (bench_score.c),
 * which builds it after cl/and.cl (find_doc). The engine scores while it intersects (and.cl:
 * match_and); this kernel measures the scoring step apart: each candidate looked up in every
 * term's list and its contributions summed in query-term order from 0.
 *
 * One work-group per abi_unit: BM25 of the unit's candidates, packed after those of the query's
 * earlier units into packed/cscore from cand_offset on; the query's last unit writes its total
 * into ncand, and the segments of a two-level top-k into useg and qseg. */
/* Candidates of the units before unit g of the same query (every work-item of the group calls it). */
inline uint units_before(__global const uint *in, uint units_base, uint g, __global const uint *ucount,
                         __local uint *scan)
{
    uint first = UNITS_AT(in, units_base, g)->first_unit, sum = 0, total;
    for (uint v = first + get_local_id(0); v < g; v += get_local_size(0)) sum += ucount[v];
    wg_scan_incl(scan, sum, &total);
    return total;
}

__kernel __attribute__((reqd_work_group_size(WG_SCORE, 1, 1)))
void score_and(__global const uint *in, uint qinfo_base, uint qterm_base,
               __global const uint *docs, __global const uint *freqs,
               __global const float *norms, __global const uint *cand,
               __global uint *ncand, __global float *cscore,
               uint skips_base, __global const idx_block *blocks, __global const abi_task *stasks,
               __global const uint *nsel, uint units_base, uint nunits, __global const uint *ucount,
               __global uint *packed, __global uint *useg, __global uint *qseg, uint k)
{
    __local uint scan[WG_SCORE];
    uint lid = get_local_id(0), g = get_group_id(0);
    __global const abi_unit *u = UNITS_AT(in, units_base, g);
    uint q = u->query;
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    uint nt = qi->num_terms, coff = qi->cand_offset;
    uint at = units_before(in, units_base, g, ucount, scan), n = ucount[g];
    int last = g + 1 == nunits || UNITS_AT(in, units_base, g + 1)->query != q;
    if (lid == 0) {
        /* top-k's two levels: this unit's candidates, then (from its last unit) the query's units'
         * results in the first level's output (cl/abi.h's layout with nunits groups) */
        useg[2 * g] = coff + at;
        useg[2 * g + 1] = n;
        if (last) {
            uint first = u->first_unit;
            ncand[q] = at + n;
            qseg[2 * q] = nunits + first * k;
            qseg[2 * q + 1] = (g - first + 1) * k;
        }
    }
    if (n == 0) return;
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    for (uint i = lid; i < n; i += WG_SCORE) {
        uint d = cand[coff + u->begin + i];
        float s = 0.0f;
        for (uint t = 0; t < nt; t++) {
            uint p = find_doc(qt + t, d, docs, in, skips_base, blocks, stasks, nsel);
            /* always found on valid lists; the test keeps a forged, unsorted one in bounds */
            if (p != ABI_NO_BLOCK) s += bm25_contrib(qt[t].weight, freqs[p], norms[d]);
        }
        packed[coff + at + i] = d;
        cscore[coff + at + i] = s;
    }
}
