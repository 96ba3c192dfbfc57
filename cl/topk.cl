/* topk.cl: per-query top-k selection, one work-group per query.
 *
 * It ranks 32-bit keys (cl/abi.h): a score's float bits (BM25 with Lucene's idf is > 0 for every
 * match, so the bits order like the floats, and 0 means "no match"), with ABI_KEY_TIER set where
 * an algorithm ranks a class of documents first. The group:
 *  1. finds the k-th largest key T by radix select (common.cl: wg_kth_key; none when there are
 *     at most k keys: all of them survive, the common case of a short AND query's work unit);
 *  2. compacts, in docID order (prefix sums), every key > T and the first `need` keys equal
 *     to T, so ties at the boundary keep the smaller docIDs, into scratch;
 *  3. bitonic-sorts the m <= k survivors by (key desc, docID asc) and writes them out, scores
 *     without the tier bit.
 * Input is either a dense accumulator row per group (docID = position) or a segment per group:
 * seg[2g] is where its docIDs start in cand_docs, seg[2g + 1] how many, and its keys sit
 * key_shift words further on in scores. Segments are read in order, and ties at the boundary
 * keep the earlier entries, so a segment must list equal keys in docID order. Two levels make
 * a long candidate list fast (Ding et al.'s multi-level top-k): each work unit's candidates
 * first (segments of one unit's share), then each query over its units' results, whose
 * segment is those results one unit after another (equal keys in docID order: units follow
 * the docID order, and a unit's results order equal keys by docID).
 *
 * Output layout: cl/abi.h's ABI_OUT_* (one read for the whole batch). scratch holds
 * P = next_pow2(k) pairs per query. */

/* The rank order: larger key first, then smaller docID (src/query/batch.h: hit_before). */
inline bool topk_before(uint ka, uint da, uint kb, uint db)
{
    return ka > kb || (ka == kb && da < db);
}

__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_select(__global const uint *scores, __global const uint *cand_docs,
                 __global const uint *seg, uint key_shift,
                 uint dense, uint num_docs, uint k, uint P, uint Q,
                 __global uint *sdoc, __global uint *skey, __global uint *out)
{
    __local uint hist[256];
    __local uint scan[WG_TOPK];
    __local uint sh[3];
    uint q = get_group_id(0), lid = get_local_id(0);
    ulong base;
    uint count;
    if (dense) {
        base = (ulong)q * num_docs;
        count = num_docs;
    } else {
        base = seg[2 * q];
        count = seg[2 * q + 1];
    }
    __global const uint *sc = scores + base + key_shift; /* keys: score bits, maybe with ABI_KEY_TIER */

    /* 1. radix select (common.cl); with at most k keys, none: every match survives (T = 1) */
    uint T, need;
    wg_kth_key(sc, 1, count, k, hist, sh, &T, &need);

    /* 2. ordered compaction of the survivors */
    __global uint *sd = sdoc + (ulong)q * P;
    __global uint *ss = skey + (ulong)q * P;
    uint m = 0, ties = 0;
    for (uint b0 = 0; b0 < count; b0 += WG_TOPK) {
        uint i = b0 + lid;
        uint key = i < count ? sc[i] : 0u;
        uint gt = key != 0 && key > T, eq = key != 0 && key == T;
        uint tot_eq, tot_sel;
        uint eq_rank = wg_scan_incl(scan, eq, &tot_eq) - eq + ties;
        uint sel = gt || (eq && eq_rank < need);
        uint pos = wg_scan_incl(scan, sel, &tot_sel) - sel + m;
        if (sel) {
            sd[pos] = dense ? i : cand_docs[base + i];
            ss[pos] = key;
        }
        ties += tot_eq;
        m += tot_sel;
    }

    /* 3. bitonic sort of scratch[0..p2), padded with entries that sort last */
    uint p2 = 1;
    while (p2 < m) p2 <<= 1;
    for (uint i = m + lid; i < p2; i += WG_TOPK) {
        sd[i] = 0xFFFFFFFFu;
        ss[i] = 0u; /* below every match's key */
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint size = 2; size <= p2; size <<= 1) {
        for (uint stride = size >> 1; stride > 0; stride >>= 1) {
            for (uint t = lid; t < p2 / 2; t += WG_TOPK) {
                uint a = 2 * stride * (t / stride) + (t % stride), b = a + stride;
                bool first_half = (a & size) == 0; /* this run sorts best-first, else worst-first */
                uint sa = ss[a], sb = ss[b];
                uint da = sd[a], db = sd[b];
                bool swap = first_half ? topk_before(sb, db, sa, da) : topk_before(sa, da, sb, db);
                if (swap) {
                    ss[a] = sb; ss[b] = sa;
                    sd[a] = db; sd[b] = da;
                }
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
    }
    if (lid == 0) out[q] = m;
    __global uint *od = out + ABI_OUT_DOC((ulong)Q, k, q, 0);
    __global uint *os = out + ABI_OUT_SCORE((ulong)Q, k, q, 0);
    /* all k slots: past the m hits, no document and key 0, so a second level reading this
     * output (AND's work units) sees no match there */
    for (uint r = lid; r < k; r += WG_TOPK) {
        od[r] = r < m ? sd[r] : ABI_NO_DOC;
        os[r] = r < m ? ss[r] & ~ABI_KEY_TIER : 0u;
    }
}
