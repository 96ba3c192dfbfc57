/* topk.cl: per-query top-k selection, one work-group per query.
 *
 * It ranks 32-bit keys (cl/abi.h): a score's float bits (BM25 with Lucene's idf is > 0 for every
 * match, so the bits order like the floats, and 0 means "no match"), with ABI_KEY_TIER set where
 * an algorithm ranks a class of documents first. The group:
 *  1. finds the k-th largest key T by radix select (common.cl: wg_kth_key; none when there are
 *     at most k keys: all of them survive, the common case of a short AND query's work unit);
 *  2. compacts (prefix sums) every key > T and the `need` keys equal to T with the smallest
 *     docIDs into scratch, so ties at the boundary keep the smaller docIDs;
 *  3. bitonic-sorts the m <= k survivors by (key desc, docID asc) and writes them out, scores
 *     without the tier bit.
 * Input is either a dense accumulator row per group (docID = position) or a segment per group:
 * seg[2g] is where its docIDs start in cand_docs, seg[2g + 1] how many, and its keys sit
 * key_shift words further on in scores. A segment may list its entries in any order: where more
 * keys equal T than are needed, a second radix select over those entries' docIDs finds the
 * need-th smallest (topk_tie_doc), so an algorithm that gathers candidates out of docID order
 * (an OR query's units, one term's postings after another) ranks exactly like one that does not.
 * In a dense row position order is docID order and the first `need` ties are the ones. Two
 * levels make a long candidate list fast (Ding et al.'s multi-level top-k): each work unit's
 * candidates first (segments of one unit's share), then each query over its units' results,
 * whose segment is those results one unit after another.
 *
 * Output layout: cl/abi.h's ABI_OUT_* (one read for the whole batch). scratch holds
 * P = next_pow2(k) pairs per query. */

/* The rank order: larger key first, then smaller docID (src/query/batch.h: hit_before). */
inline bool topk_before(uint ka, uint da, uint kb, uint db)
{
    return ka > kb || (ka == kb && da < db);
}

/* Among a segment's entries whose key is T (there are more than need of them), the need-th
 * smallest docID *D, by radix select from the top byte down: four passes, each a 256-bin
 * histogram of the next 8 bits of the docIDs that share the prefix chosen so far, then the
 * lowest bin that reaches the count still wanted. *needD is how many entries with docID *D are
 * taken (1 where docIDs are distinct; a duplicate docID keeps its first copies in segment
 * order). Every work-item of the group calls it (barriers), with run 0 where there is nothing
 * to do; hist holds 256 uints, sh 2. */
inline void topk_tie_doc(__global const uint *sc, __global const uint *docs, uint count, uint T, uint need,
                         uint run, __local uint *hist, __local uint *sh, uint *D, uint *needD)
{
    uint lid = get_local_id(0), n = get_local_size(0);
    if (lid == 0) {
        sh[0] = 0;    /* the docID prefix chosen so far */
        sh[1] = need; /* ties still to take at or above it */
    }
    uint mask = 0;
    barrier(CLK_LOCAL_MEM_FENCE); /* uniform trip count: no passes unless run */
    for (int shift = run ? 24 : -8; shift >= 0; shift -= 8) {
        for (uint j = lid; j < 256; j += n) hist[j] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        uint prefix = sh[0];
        for (uint i = lid; i < count; i += n) {
            if (sc[i] != T) continue;
            uint d = docs[i];
            if ((d & mask) == prefix) atomic_inc(&hist[(d >> shift) & 255u]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            uint left = sh[1], below = 0, bin = 0;
            /* more than need ties share the prefix, so a bin reaches left; 255 at the latest */
            for (; bin < 255; bin++) {
                if (below + hist[bin] >= left) break;
                below += hist[bin];
            }
            sh[0] = prefix | (bin << shift);
            sh[1] = left - below;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        mask |= 255u << shift;
    }
    *D = sh[0];
    *needD = sh[1];
    barrier(CLK_LOCAL_MEM_FENCE); /* sh is read by all before a later call rewrites it */
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

    /* 1b. a segment's ties at T, when more than need: keep the smallest docIDs, docID < D and
     * the first needD entries with docID D (uniform: every value below is the group's) */
    __global const uint *cd = cand_docs + (dense ? 0 : base); /* read with segments only */
    uint by_doc = 0, D = 0, needD = 0;
    /* no barrier sits under a branch: POCL mishandles barriers there (every work-item reaches
     * them, yet it skipped a barrier-holding loop called under one) */
    uint seg_ties = !dense && need != 0xFFFFFFFFu;
    if (lid == 0) sh[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint c = 0;
    for (uint i = lid; seg_ties && i < count; i += WG_TOPK) c += sc[i] == T;
    if (c) atomic_add(&sh[0], c);
    barrier(CLK_LOCAL_MEM_FENCE);
    by_doc = seg_ties && sh[0] > need;
    barrier(CLK_LOCAL_MEM_FENCE);
    topk_tie_doc(sc, cd, count, T, need, by_doc, hist, sh, &D, &needD);

    /* 2. compaction of the survivors */
    __global uint *sd = sdoc + (ulong)q * P;
    __global uint *ss = skey + (ulong)q * P;
    uint m = 0, ties = 0;
    for (uint b0 = 0; b0 < count; b0 += WG_TOPK) {
        uint i = b0 + lid;
        uint key = i < count ? sc[i] : 0u;
        uint gt = key != 0 && key > T, eq = key != 0 && key == T;
        uint tot_eq, tot_sel;
        /* by docID: rank among the ties at D; else among all ties (ties: those ranked so far);
         * one scan either way, outside any branch (POCL mishandles barriers under one) */
        uint d = by_doc && eq ? cd[i] : 0u;
        uint atD = eq && d == D, x = by_doc ? atD : eq;
        uint rank = wg_scan_incl(scan, x, &tot_eq) - x + ties;
        uint sel = gt || (eq && (by_doc ? d < D || (atD && rank < needD) : rank < need));
        uint pos = wg_scan_incl(scan, sel, &tot_sel) - sel + m;
        if (sel) {
            sd[pos] = dense ? i : cd[i];
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
