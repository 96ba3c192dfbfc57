/* and.cl: conjunctive queries (-m and): the documents holding every term of the query, scored
 * by BM25. src/algo/and.c launches select_blocks, the second decode, plan_units and match_and;
 * and-or reuses plan_units and intersect_and.
 *
 * Block skipping (Ding et al.): a query's driving list (its shortest) is decoded whole; of every
 * other list with skipping (abi_term.skip, ABI_SKIP_DRIVEN in cl/abi.h), select_blocks picks the
 * blocks whose [first, last] holds a docID of the driving list, one work-group per list, and
 * only those are decoded. find_doc then locates a docID in such a list by a binary search over
 * the chosen blocks' last docIDs and one within the block.
 *
 * Block-max pruning of one-term queries (ABI_SKIP_TOP): the query's list is its driving list,
 * and select_blocks keeps only the blocks whose max_score reaches the list's k-th largest (the
 * radix select of common.cl over the block heads), so a query on a list of millions of postings
 * decodes, scores and ranks a few blocks' worth.
 *
 * plan_units: the work units' shares of the driving lists (cl/abi.h: abi_unit), planned on the
 * device, where the driving list's length is known once its blocks are chosen.
 *
 * match_and: one work-group per work unit (a share of one query's driving list; short queries
 * are one unit, long ones many), as in Wu et al.'s batched intersection: the group walks its
 * share in steps of WG_INTERSECT; each work-item looks its docID up in every other list of the
 * query (find_doc) and, while it is found, adds the term's BM25 contribution, in query-term
 * order from 0, exactly as the reference engine adds them; a work-group prefix sum over the
 * match flags compacts the matches and their scores, in docID order, to the unit's candidate
 * slots (cand_offset + begin) and writes the unit's segment for the first level of top-k
 * (topk.cl), and, from a query's last unit, the query's segment of the second level. A query
 * flagged ABI_QF_EMPTY or ABI_QF_UNKNOWN_TERM has no candidates. intersect_and is the same walk
 * without the scores (and-or marks the documents; bench intersect measures it). */
/* Slot of docID d in term t's decoded postings, or ABI_NO_BLOCK when the list lacks it. */
inline uint find_doc(__global const abi_term *t, uint d, __global const uint *docs, __global const uint *in,
                     uint skips_base, __global const idx_block *blocks, __global const abi_task *stasks,
                     __global const uint *nsel)
{
    if (t->skip == 0) {
        uint off = t->list_offset, p = lower_bound(docs + off, t->df, d);
        return p < t->df && docs[off + p] == d ? off + p : ABI_NO_BLOCK;
    }
    __global const abi_skip *sk = SKIPS_AT(in, skips_base, t->skip - 1);
    __global const abi_task *tk = stasks + sk->task_base;
    uint lo = 0, hi = nsel[t->skip - 1];
    while (lo < hi) { /* the first chosen block whose last docID is >= d */
        uint mid = lo + ((hi - lo) >> 1);
        if (blocks[tk[mid].block].last < d) lo = mid + 1; else hi = mid;
    }
    if (lo == nsel[t->skip - 1]) return ABI_NO_BLOCK;
    __global const idx_block *b = blocks + tk[lo].block;
    if (b->first > d) return ABI_NO_BLOCK;
    uint off = tk[lo].dst, n = IDX_INFO_COUNT(b->info), p = lower_bound(docs + off, n, d);
    return p < n && docs[off + p] == d ? off + p : ABI_NO_BLOCK;
}

/* The query's driving term: its shortest list, the first of them on a tie (the planner's rule). */
inline uint driving_term(__global const abi_term *qt, uint nt)
{
    uint s = 0;
    for (uint t = 1; t < nt; t++)
        if (qt[t].df < qt[s].df) s = t;
    return s;
}

/* Appends block fb + b of a list to its chosen tasks where hit, after the count chosen so far
 * (an in-group scan numbers the hits, so every work-item calls it); returns the new count. */
inline uint choose_block(uint hit, uint b, uint fb, uint count, __global const abi_skip *sk, uint block_size,
                         __global abi_task *dst, __local uint *scan)
{
    uint total;
    uint pos = wg_scan_incl(scan, hit, &total) - hit + count;
    if (hit) {
        abi_task t = {fb + b, sk->dst_base + pos * block_size};
        dst[pos] = t;
    }
    return count + total;
}

/* One work-group per abi_skip: the blocks of its list that its kind chooses (cl/abi.h), in list
 * order, as decode tasks (block_size slots each). ABI_SKIP_DRIVEN: the blocks whose docID range
 * holds a docID of the query's driving list, the search running from the shorter side (blocks
 * into the driving list, or driving docIDs into the block heads); ABI_SKIP_TOP: the blocks whose
 * max_score can reach the query's top k. */
__kernel __attribute__((reqd_work_group_size(WG_INTERSECT, 1, 1)))
void select_blocks(__global const uint *in, uint qinfo_base, uint qterm_base, uint skips_base,
                   __global const idx_block *blocks, __global const uint *docs, uint block_size,
                   __global abi_task *stasks, __global uint *nsel, __global uint *out, uint nsel_at)
{
    __local uint scan[WG_INTERSECT], pick[WG_INTERSECT];
    __local uint hist[ABI_KTH_BINS], sh[3]; /* ABI_SKIP_TOP's radix select */
    uint r = get_group_id(0), lid = get_local_id(0);
    __global const abi_skip *sk = SKIPS_AT(in, skips_base, r);
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, sk->query);
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    __global const abi_term *dt = qt + driving_term(qt, qi->num_terms);
    uint soff = dt->list_offset, slen = dt->df, fb = sk->first_block, nb = sk->num_blocks;
    __global abi_task *dst = stasks + sk->task_base;
    uint count = 0;
    if (sk->kind == ABI_SKIP_TOP) {
        /* the blocks whose max_score reaches T less a margin of 2^-16 (rounding of the weights,
         * the norms and the division is some ulps); T = 1 with at most k blocks: all of them */
        uint T, need;
        wg_kth_key((__global const uint *)(blocks + fb) + 6, 8, nb, sk->k, hist, sh, &T, &need);
        float floor_score = as_float(T) * (1.0f - 1.0f / 65536.0f);
        for (uint base = 0; base < nb; base += WG_INTERSECT) { /* uniform trip count */
            uint b = base + lid, hit = b < nb && blocks[fb + b].max_score >= floor_score;
            count = choose_block(hit, b, fb, count, sk, block_size, dst, scan);
        }
    } else if (slen < nb) {
        /* fewer driving docIDs than blocks: each docID finds its block (the first whose last is
         * >= it) and the first docID of a block to hold one selects it; the docIDs ascend, so
         * the blocks come in list order (a docID selects no block, ABI_NO_BLOCK, when it falls
         * between two) */
        uint prev_last = ABI_NO_BLOCK; /* the block the previous step's last docID selected */
        for (uint base = 0; base < slen; base += WG_INTERSECT) { /* uniform trip count */
            uint i = base + lid, sel = ABI_NO_BLOCK;
            if (i < slen) {
                uint d = docs[soff + i], lo = 0, hi = nb;
                while (lo < hi) {
                    uint mid = lo + ((hi - lo) >> 1);
                    if (blocks[fb + mid].last < d) lo = mid + 1; else hi = mid;
                }
                if (lo < nb && blocks[fb + lo].first <= d) sel = lo;
            }
            pick[lid] = sel;
            barrier(CLK_LOCAL_MEM_FENCE);
            uint prev = lid ? pick[lid - 1] : prev_last, hit = sel != ABI_NO_BLOCK && sel != prev;
            prev_last = pick[WG_INTERSECT - 1]; /* past slen only in the last step, which has no next */
            count = choose_block(hit, sel, fb, count, sk, block_size, dst, scan); /* its barriers guard pick too */
        }
    } else {
        /* each block looks for a driving docID within its [first, last] */
        for (uint base = 0; base < nb; base += WG_INTERSECT) { /* uniform trip count */
            uint b = base + lid, hit = 0;
            if (b < nb) {
                __global const idx_block *m = blocks + fb + b;
                uint p = lower_bound(docs + soff, slen, m->first);
                hit = p < slen && docs[soff + p] <= m->last;
            }
            count = choose_block(hit, b, fb, count, sk, block_size, dst, scan);
        }
    }
    for (uint i = count + lid; i < sk->max_tasks; i += WG_INTERSECT) dst[i].block = ABI_NO_BLOCK;
    if (lid == 0) {
        nsel[r] = count;
        atomic_add(out + nsel_at, count); /* the batch's chosen blocks, read back with the results */
    }
}

/* The length of a query's driving list on the device: its df, or where select_blocks chose its
 * blocks (ABI_SKIP_TOP), block_size per chosen block but the last, whose head gives its count. */
inline uint driving_length(__global const abi_term *dt, __global const uint *in, uint skips_base,
                           __global const idx_block *blocks, __global const abi_task *stasks,
                           __global const uint *nsel, uint block_size)
{
    if (dt->skip == 0) return dt->df;
    uint n = nsel[dt->skip - 1];
    if (n == 0) return 0;
    __global const abi_task *tk = stasks + SKIPS_AT(in, skips_base, dt->skip - 1)->task_base;
    return (n - 1) * block_size + IDX_INFO_COUNT(blocks[tk[n - 1].block].info);
}

/* One work-item per abi_unit: its share [begin, end) of its query's driving list, `chunk`
 * postings from the unit's place among the query's units on; units past the list's length as
 * the device has it (driving_length) are empty. Writes into the batch input's unit records. */
__kernel void plan_units(__global uint *in, uint qinfo_base, uint qterm_base, uint skips_base, uint units_base,
                         uint nunits, __global const idx_block *blocks, __global const abi_task *stasks,
                         __global const uint *nsel, uint block_size, uint chunk)
{
    uint g = get_global_id(0);
    if (g >= nunits) return;
    __global abi_unit *u = (__global abi_unit *)(in + units_base) + g;
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, u->query);
    uint len = 0;
    if (qi->num_terms && !(qi->flags & (ABI_QF_EMPTY | ABI_QF_UNKNOWN_TERM))) {
        __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
        len = driving_length(qt + driving_term(qt, qi->num_terms), in, skips_base, blocks, stasks, nsel, block_size);
    }
    ulong b = (ulong)(g - u->first_unit) * chunk;
    u->begin = (uint)min(b, (ulong)len);
    u->end = (uint)min(b + chunk, (ulong)len);
}

/* One work-group per abi_unit: the unit's share of its query's driving list, each docID kept
 * when every other list holds it, compacted in docID order to the share's candidate slots; their
 * number into ucount[unit]. */
__kernel __attribute__((reqd_work_group_size(WG_INTERSECT, 1, 1)))
void intersect_and(__global const uint *in, uint qinfo_base, uint qterm_base,
                   __global const uint *docs, __global uint *cand, __global uint *ucount,
                   uint skips_base, __global const idx_block *blocks, __global const abi_task *stasks,
                   __global const uint *nsel, uint units_base)
{
    __local uint scan[WG_INTERSECT];
    uint lid = get_local_id(0), g = get_group_id(0);
    __global const abi_unit *u = UNITS_AT(in, units_base, g);
    uint begin = u->begin, end = u->end;
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, u->query);
    uint nt = qi->num_terms, coff = qi->cand_offset;
    if (nt == 0 || (qi->flags & (ABI_QF_EMPTY | ABI_QF_UNKNOWN_TERM))) {
        if (lid == 0) ucount[g] = 0;
        return;
    }
    __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
    uint shortest = driving_term(qt, nt);
    uint soff = qt[shortest].list_offset;
    uint count = 0;
    for (uint base = begin; base < end; base += WG_INTERSECT) { /* uniform trip count */
        uint i = base + lid, match = 0, d = 0;
        if (i < end) {
            d = docs[soff + i];
            match = 1;
            for (uint t = 0; t < nt && match; t++)
                if (t != shortest)
                    match = find_doc(qt + t, d, docs, in, skips_base, blocks, stasks, nsel) != ABI_NO_BLOCK;
        }
        uint total;
        uint pos = wg_scan_incl(scan, match, &total);
        if (match) cand[coff + begin + count + pos - 1] = d;
        count += total;
    }
    if (lid == 0) ucount[g] = count;
}

/* One work-group per abi_unit: the unit's share of its query's driving list, each docID kept
 * when every other list holds it, with its BM25 sum (terms in query order, from 0), compacted in
 * docID order to the unit's candidate slots, cand_offset + begin in cand and cscore; the unit's
 * first-level top-k segment (start, count) into useg, and from the query's last unit the
 * query's second-level segment into qseg (topk.cl; cl/abi.h's output layout with nunits groups). */
__kernel __attribute__((reqd_work_group_size(WG_INTERSECT, 1, 1)))
void match_and(__global const uint *in, uint qinfo_base, uint qterm_base,
               __global const uint *docs, __global const uint *freqs, __global const float *norms,
               __global uint *cand, __global float *cscore, uint skips_base, __global const idx_block *blocks,
               __global const abi_task *stasks, __global const uint *nsel, uint units_base, uint nunits,
               __global uint *useg, __global uint *qseg, uint k)
{
    __local uint scan[WG_INTERSECT];
    uint lid = get_local_id(0), g = get_group_id(0);
    __global const abi_unit *u = UNITS_AT(in, units_base, g);
    uint q = u->query, begin = u->begin, end = u->end;
    __global const abi_query *qi = QUERY_AT(in, qinfo_base, q);
    uint nt = qi->num_terms, at = qi->cand_offset + begin;
    if (lid == 0 && (g + 1 == nunits || UNITS_AT(in, units_base, g + 1)->query != q)) {
        uint first = u->first_unit;
        qseg[2 * q] = nunits + first * k;
        qseg[2 * q + 1] = (g - first + 1) * k;
    }
    uint count = 0;
    if (nt != 0 && !(qi->flags & (ABI_QF_EMPTY | ABI_QF_UNKNOWN_TERM))) { /* uniform */
        __global const abi_term *qt = TERMS_AT(in, qterm_base, qi->term_start);
        uint shortest = driving_term(qt, nt);
        uint soff = qt[shortest].list_offset;
        for (uint base = begin; base < end; base += WG_INTERSECT) { /* uniform trip count */
            uint i = base + lid, match = 0, d = 0;
            float s = 0.0f;
            if (i < end) {
                d = docs[soff + i];
                match = 1;
                for (uint t = 0; t < nt && match; t++) {
                    uint p = t == shortest ? soff + i : find_doc(qt + t, d, docs, in, skips_base, blocks, stasks, nsel);
                    if (p == ABI_NO_BLOCK) match = 0;
                    else s += bm25_contrib(qt[t].weight, freqs[p], norms[d]);
                }
            }
            uint total;
            uint pos = wg_scan_incl(scan, match, &total) - match + count;
            if (match) {
                cand[at + pos] = d;
                cscore[at + pos] = s;
            }
            count += total;
        }
    }
    if (lid == 0) {
        useg[2 * g] = at;
        useg[2 * g + 1] = count;
    }
}
