/* topk.cl: per-query top-k selection: topk_select (below, one work-group per query) for segments
 * and any dense row, topk_rows (further down, one work-group a row) for dense rows read once,
 * topk_team (at the end, a team of work-items a row) for short dense rows at small k.
 *
 * topk_select ranks 32-bit keys (cl/abi.h): a score's float bits (BM25 with Lucene's idf is > 0 for every
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
 * to do; hist holds ABI_KTH_BINS uints, sh 2. */
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
        for (uint j = lid; j < ABI_KTH_BINS; j += n) hist[j] = 0;
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
    __local uint hist[ABI_KTH_BINS];
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

/* ---- Dense rows read once: topk_rows ---------------------------------------------------------
 *
 * topk_select reads a dense row five times (four radix passes and the compaction). topk_rows
 * reads it once, one work-group a row (where the rows fill the device: src/algo/topk.c),
 * keeping a buffer of candidates (key, position) in local memory:
 *  - the row streams through in steps of TR_STEP keys (TR_VEC 16-byte loads a work-item, each
 *    step's loads issued one step ahead); every key above the threshold t (at first 0: every
 *    match) is appended to the buffer;
 *  - when the next step might not fit, the buffer is cut to its k best: a radix select over its
 *    keys (11 + 11 + 10 bits; it stops at a digit whose bin is taken whole), then, where more
 *    entries equal the k-th key than are taken, over their positions (smallest first); the
 *    entries chosen move to the front in order, and t becomes the k-th key: a later key equal to
 *    it has a larger position and ranks below every entry kept, so only keys above t enter;
 *  - at the end the buffer is cut to its k best once more and sorted in local memory (each entry
 *    counts those ranked before it where they are at most WG_ROWS, else a bitonic sort).
 * On random scores the threshold rises fast: after the first cut about k ln(n / cap) keys enter in
 * all, so the row is read once and the buffer cut a few times. A row in ascending order is the
 * worst case, a cut every step (each a few passes over the buffer in local memory), never a wrong
 * answer. The output is topk_select's: the same docIDs in the same order (ties to the smaller
 * position), all k slots written.
 *
 * POCL takes many minutes to compile barriers in loops nested three deep (a cut's passes inside
 * the stream's steps), so the kernel is one loop, a step of a state machine an iteration, with
 * the same barriers in every iteration: phase A, barrier, phase B, a scan of one value a
 * work-item (wg_scan_incl), phase C, barrier. What a phase does depends on the operation (the
 * branches hold no barrier), and every work-item keeps the state itself, computing the same next
 * operation from the same values (the scan's total, words one work-item wrote before a barrier).
 *
 * POCL 5.0's loop-based work-group formation aborts the process (Kernel.cc's
 * region_entry_barrier assertion) on this loop as it stands: a barrier of it followed at once by
 * a branch on the operation, whose value the compiler knows from before the barrier. Built for
 * POCL (CLS_POCL), the operation crosses each of the loop's barriers through local memory
 * (tr_op_across: work-item 0 writes it, every work-item reads it back), with one barrier more at
 * the top of an iteration, the form POCL 3.1 and 5.0 both take; the GPUs keep the plain barriers,
 * since the extra barrier and round trips cost them time (docs/PERFORMANCE.md, "Kernels on POCL
 * 5.0 and cold starts").
 *
 * The host gives the work-group one local buffer lm (cap + cap + TR_BINS + WG_ROWS + TR_SH words):
 * keys | positions | histogram | scan | words the radix pick hands on, and the operation's. cap is at least
 * next_pow2(min(k, n)) (the final sort's room) and either at least n (the whole row fits: no cut
 * while streaming) or at least k + TR_STEP (after a cut the next step fits). */
#ifndef WG_ROWS
#define WG_ROWS WG_TOPK /* work-items a row (src/device/clx_params.c: WG_ROWS) */
#endif
#define TR_VEC ABI_TOPK_VEC(WG_ROWS)
#define TR_STEP (WG_ROWS * 4u * TR_VEC)
#define TR_E 8u /* buffer entries a work-item looks at in one iteration of a cut's compaction */
#define TR_BINS ABI_TOPK_BINS
#define TR_SH ABI_TOPK_ROWS_SH
/* sh's words: 0..2 the radix pick's (prefix, count left, bin taken whole); the operation across
 * the top barrier, the first and the second (one word each, so that a read of one never meets
 * the next write of the same word between two barriers) */
#define TR_SH_OP_TOP 3u
#define TR_SH_OP_A 4u
#define TR_SH_OP_C 5u
/* the operations */
#define TR_STREAM 0u
#define TR_HIST 1u
#define TR_COMPACT 2u
#define TR_SORT 3u
#define TR_END 4u

/* radix pass 0..2 over 32 bits: 11 + 11 + 10 bits from the top (topk_wide.cl's passes too) */
inline uint topk_digit_shift(uint pass) { return pass == 0 ? 21u : pass == 1 ? 10u : 0u; }
inline uint topk_digit_mask(uint pass) { return pass == 2 ? 1023u : 2047u; }
inline uint topk_prefix_mask(uint pass) { return pass == 0 ? 0u : pass == 1 ? 0xFFE00000u : 0xFFFFFC00u; }

/* Vector vi of a row seen from the 16-byte boundary a keys before its start: the keys at
 * positions vi * 4 - a .. + 3, 0 outside the row (a vector the row covers in part, its first and
 * last, is read key by key, so nothing outside the row is read). */
inline uint4 tr_load(__global const uint *row, uint vi, uint nvec, uint a, uint n)
{
    if (vi >= nvec) return (uint4)(0u);
    uint p = vi * 4u - a, i = vi * 4u;
    if (i >= a && p + 4u <= n) return ((__global const uint4 *)row)[vi];
    return (uint4)(p < n ? row[i] : 0u, p + 1u < n ? row[i + 1u] : 0u, p + 2u < n ? row[i + 2u] : 0u,
                   p + 3u < n ? row[i + 3u] : 0u);
}

inline uint tr_lane(uint4 x, uint l) { return l == 0 ? x.s0 : l == 1 ? x.s1 : l == 2 ? x.s2 : x.s3; }

/* One stage of the bitonic sort of the buffer's p2 entries by (key desc, position asc). */
inline void tr_sort_stage(__local uint *bk, __local uint *bp, uint p2, uint size, uint stride)
{
    for (uint i = get_local_id(0); i < p2 / 2; i += WG_ROWS) {
        uint x = 2 * stride * (i / stride) + (i % stride), y = x + stride;
        bool first_half = (x & size) == 0; /* this run sorts best-first, else worst-first */
        uint kx = bk[x], ky = bk[y], dx = bp[x], dy = bp[y];
        if (first_half ? topk_before(ky, dy, kx, dx) : topk_before(kx, dx, ky, dy)) {
            bk[x] = ky; bk[y] = kx;
            bp[x] = dy; bp[y] = dx;
        }
    }
}

/* What the sort does in one phase: pad the buffer to p2 with entries that sort last, then one
 * stage a phase, then the output (m hits of k; every slot written). *st counts the phases: 0 pad,
 * 1 .. stages, then the output; returns 1 once the output is written. */
inline uint tr_sort_phase(__local uint *bk, __local uint *bp, uint m, uint p2, uint *st, uint *size, uint *stride,
                          uint k, uint Q, uint q, __global uint *out)
{
    uint lid = get_local_id(0);
    if (*st == 0) {
        for (uint i = m + lid; i < p2; i += WG_ROWS) {
            bk[i] = 0u;
            bp[i] = 0xFFFFFFFFu;
        }
    } else if (*size <= p2) {
        tr_sort_stage(bk, bp, p2, *size, *stride);
        *stride >>= 1;
        if (*stride == 0) {
            *size <<= 1;
            *stride = *size >> 1;
        }
    } else {
        if (lid == 0) out[q] = m;
        __global uint *od = out + ABI_OUT_DOC((ulong)Q, k, q, 0);
        __global uint *os = out + ABI_OUT_SCORE((ulong)Q, k, q, 0);
        for (uint r = lid; r < k; r += WG_ROWS) {
            od[r] = r < m ? bp[r] : ABI_NO_DOC;
            os[r] = r < m ? bk[r] & ~ABI_KEY_TIER : 0u;
        }
        return 1;
    }
    (*st)++;
    return 0;
}

/* The final order of at most WG_ROWS entries by rank: work-item i counts the entries that rank
 * before entry i (positions differ, so ranks do) and writes it to the output at its rank, with
 * the output's empty slots; fewer steps than a bitonic sort's stages. */
inline uint tr_rank(__local const uint *bk, __local const uint *bp, uint m)
{
    uint lid = get_local_id(0), r = 0;
    if (lid < m) {
        uint kx = bk[lid], dx = bp[lid];
        for (uint j = 0; j < m; j++) r += topk_before(bk[j], bp[j], kx, dx);
    }
    return r;
}

inline void tr_rank_out(__local const uint *bk, __local const uint *bp, uint m, uint r, uint k, uint Q, uint q,
                        __global uint *out)
{
    uint lid = get_local_id(0);
    __global uint *od = out + ABI_OUT_DOC((ulong)Q, k, q, 0);
    __global uint *os = out + ABI_OUT_SCORE((ulong)Q, k, q, 0);
    if (lid == 0) out[q] = m;
    if (lid < m) {
        od[r] = bp[lid];
        os[r] = bk[lid] & ~ABI_KEY_TIER;
    }
    for (uint i = m + lid; i < k; i += WG_ROWS) {
        od[i] = ABI_NO_DOC;
        os[i] = 0u;
    }
}

/* A barrier of topk_rows' loop: on POCL the operation crosses it through local memory (see the
 * section's header), the same in every work-item after it; a plain barrier elsewhere. */
inline uint tr_op_across(__local uint *slot, uint op)
{
#if CLS_POCL
    if (get_local_id(0) == 0) *slot = op;
    barrier(CLK_LOCAL_MEM_FENCE);
    return *slot;
#else
    (void)slot;
    barrier(CLK_LOCAL_MEM_FENCE);
    return op;
#endif
}

/* Whether the key at row position pos enters the buffer: above the threshold t (key 0, no match,
 * never does) and in the row (positions before its start wrap to large values). */
#define TR_TAKE(key, pos) ((key) > t && (pos) < n)

__kernel __attribute__((reqd_work_group_size(WG_ROWS, 1, 1)))
void topk_rows(__global const uint *scores, uint key_shift, uint n, uint k, uint cap, uint Q, __global uint *out,
               __local uint *lm)
{
    __local uint *bk = lm, *bp = lm + cap, *hist = lm + 2 * (ulong)cap, *scan = hist + TR_BINS, *sh = scan + WG_ROWS;
    uint q = get_group_id(0), lid = get_local_id(0);
    ulong start = (ulong)q * n + key_shift;
    uint a = (uint)(start & 3u); /* the row's keys before its first 16-byte boundary */
    __global const uint *row = scores + (start - a);
    uint span = a + n, nvec = (span + 3u) / 4u;
    uint steps = (nvec + WG_ROWS * TR_VEC - 1u) / (WG_ROWS * TR_VEC);
    /* positions are below 2^bits: the first digit of a complemented position that can be other than ones */
    uint bits = n > 1u ? 32u - clz(n - 1u) : 0u, fp = bits > 21u ? 0u : bits > 10u ? 1u : 2u;
    for (uint j = lid; j < TR_BINS; j += WG_ROWS) hist[j] = 0; /* each radix pick clears it behind itself */

    /* the state, the same in every work-item */
    uint op = TR_STREAM, s = 0, c = 0, t = 0, fin = 0;
    uint kpre = 0, ppre = 0, left = 0, bypos = 0, dig = 0; /* the select */
    uint kt = 0, dend = 0, ch = 0, m = 0;                  /* the cut: keep key > kt, or key == kt and position < dend */
    uint p2 = 1, st = 0, size = 2, stride = 1;             /* the sort */
    uint4 nx[TR_VEC], x[TR_VEC];
    for (uint v = 0; v < TR_VEC; v++) nx[v] = tr_load(row, v * WG_ROWS + lid, nvec, a, n);
    uint ek[TR_E], ep[TR_E];
    /* the histogram bins this work-item sums, counted from the top (none past the 2,048th item) */
    const uint per = TR_BINS >= WG_ROWS ? TR_BINS / WG_ROWS : 1u;
    uint hi = lid * per < TR_BINS ? TR_BINS - lid * per : 0u, lo = hi ? hi - per : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);

    while (op != TR_END) {
        uint val = 0, done = 0;
#if CLS_POCL
        op = tr_op_across(sh + TR_SH_OP_TOP, op);
#endif
        /* phase A */
        if (op == TR_STREAM) { /* this step's keys (loaded a step ahead), the next step's loads */
            for (uint v = 0; v < TR_VEC; v++) {
                uint vi = (s * TR_VEC + v) * WG_ROWS + lid, p = vi * 4u - a;
                x[v] = nx[v];
                nx[v] = tr_load(row, vi + WG_ROWS * TR_VEC, nvec, a, n);
                val += TR_TAKE(x[v].s0, p) + TR_TAKE(x[v].s1, p + 1u) + TR_TAKE(x[v].s2, p + 2u) +
                       TR_TAKE(x[v].s3, p + 3u);
            }
        } else if (op == TR_HIST) { /* the digit's histogram among the entries sharing the prefix */
            uint shift = topk_digit_shift(dig), dmask = topk_digit_mask(dig), pmask = topk_prefix_mask(dig);
            uint pre = bypos ? ppre : kpre;
            for (uint i = lid; i < c; i += WG_ROWS) {
                uint key = bk[i], w = bypos ? ~bp[i] : key;
                if ((!bypos || key == kpre) && (w & pmask) == pre) atomic_inc(&hist[(w >> shift) & dmask]);
            }
        } else if (op == TR_COMPACT) { /* this work-item's TR_E entries of the chunk, and which stay */
            uint base = (ch * WG_ROWS + lid) * TR_E;
            for (uint j = 0; j < TR_E; j++) {
                uint i = base + j;
                ek[j] = i < c ? bk[i] : 0u;
                ep[j] = i < c ? bp[i] : 0u;
                val += i < c && (ek[j] > kt || (ek[j] == kt && ep[j] < dend));
            }
        } else if (op == TR_SORT) {
            if (m <= WG_ROWS) val = tr_rank(bk, bp, m); /* written out in phase C */
            else done = tr_sort_phase(bk, bp, m, p2, &st, &size, &stride, k, Q, q, out);
        }
        op = tr_op_across(sh + TR_SH_OP_A, op);
        /* phase B: the value to scan */
        if (op == TR_HIST)
            for (uint j = lo; j < hi; j++) val += hist[j];
        uint tot, incl = wg_scan_incl(scan, val, &tot);
        /* phase C */
        if (op == TR_STREAM) { /* the takes, after the entries so far */
            uint at = c + incl - val;
            for (uint v = 0; v < TR_VEC; v++) {
                uint p = ((s * TR_VEC + v) * WG_ROWS + lid) * 4u - a;
                for (uint l = 0; l < 4; l++) {
                    uint key = tr_lane(x[v], l);
                    if (TR_TAKE(key, p + l)) {
                        bk[at] = key;
                        bp[at] = p + l;
                        at++;
                    }
                }
            }
        } else if (op == TR_HIST) {
            /* the work-item whose bins hold the entry wanted (left-th from the top) walks them */
            uint above = incl - val;
            if (above < left && left <= incl) {
                uint shift = topk_digit_shift(dig), j = hi;
                while (j > lo) {
                    j--;
                    if (above + hist[j] >= left) break;
                    above += hist[j];
                }
                sh[0] = (bypos ? ppre : kpre) | (j << shift);
                sh[1] = left - above;
                sh[2] = hist[j] == left - above; /* the bin is taken whole: no finer digit needed */
            }
            for (uint j = lo; j < hi; j++) hist[j] = 0;
        } else if (op == TR_COMPACT) { /* in order to the front: an entry only moves down, to a slot read in phase A */
            uint at = m + incl - val;
            for (uint j = 0; j < TR_E; j++)
                if (ek[j] > kt || (ek[j] == kt && ep[j] < dend)) {
                    bk[at] = ek[j];
                    bp[at] = ep[j];
                    at++;
                }
        } else if (op == TR_SORT && m <= WG_ROWS) {
            tr_rank_out(bk, bp, m, val, k, Q, q, out);
            done = 1;
        } else if (op == TR_SORT && !done) {
            done = tr_sort_phase(bk, bp, m, p2, &st, &size, &stride, k, Q, q, out);
        }
        op = tr_op_across(sh + TR_SH_OP_C, op);

        /* the next operation, computed alike by every work-item */
        uint select = 0;
        if (op == TR_STREAM) {
            c += tot;
            s++;
            ulong seen = (ulong)s * TR_STEP;
            uint next = seen >= span ? 0u : (uint)min((ulong)TR_STEP, span - seen);
            fin = s >= steps; /* a row of no keys has no step, but one iteration ran */
            select = fin ? c > k : c + next > cap && c > k;
            if (fin && !select) {
                m = c;
                op = TR_SORT;
            }
        } else if (op == TR_HIST) {
            uint pre = sh[0], rest = sh[1], whole = sh[2];
            left = rest;
            if (!bypos) kpre = pre;
            else ppre = pre;
            if (whole || (bypos && dig == 2)) {
                /* a key bin taken whole: every key at or above the prefix (keys are nonzero); a
                 * position bin: every tie at or below the position prefix */
                kt = bypos ? kpre : kpre ? kpre - 1u : 0u;
                dend = bypos ? ~ppre + 1u : 0u;
                op = TR_COMPACT;
                ch = 0;
                m = 0;
            } else if (!bypos && dig == 2) { /* more entries equal the k-th key than are taken */
                bypos = 1;
                dig = fp;
            } else {
                dig++;
            }
        } else if (op == TR_COMPACT) {
            m += tot;
            ch++;
            if (ch * WG_ROWS * TR_E >= c) {
                c = m;
                if (fin) {
                    op = TR_SORT;
                } else {
                    t = max(t, kt);
                    op = TR_STREAM;
                }
            }
        } else if (op == TR_SORT && done) {
            op = TR_END;
        }
        if (select) {
            op = TR_HIST;
            bypos = 0;
            dig = 0;
            kpre = 0;
            left = k;
            ppre = topk_prefix_mask(fp); /* the complemented positions' bits above fp's digit: ones */
        }
        if (op == TR_SORT && st == 0)
            while (p2 < m) p2 <<= 1;
    }
}

/* ---- Short dense rows, a team a row: topk_team -------------------------------------------------
 *
 * topk_rows gives every row a whole work-group and a 2,048-bin histogram; for a row of a thousand
 * keys at k 10 (bench topk's 16,384 x 1,000) its fixed costs, bins cleared and scanned each pass
 * and a dozen group-wide barriers, outweigh the row. topk_team gives a row a team of TK_TEAM
 * work-items, TK_TEAMS rows a work-group, each work-item holding TK_KEYS of the row's keys in
 * registers (positions lane, lane + TK_TEAM, ...: coalesced loads, the row read once). The team
 * finds the k-th entry of the row in rank order (key desc, position asc) by radix select over the
 * pair, 8-bit digits with a 256-bin histogram a team: four digits of the key, then, where more
 * entries equal the k-th key than are taken, the digits of the position (smallest first). A
 * digit's bin taken whole ends the select early. Then every entry at or above that one (exactly
 * min(k, matches) entries: positions differ) goes to the team's survivor array in local memory,
 * and each survivor counts the survivors ranked before it: that is its output slot.
 *
 * The teams of a group run their passes in lockstep, so that every barrier is reached by every
 * work-item: a pass is the same three barriers for all, a team done (or without a row) skips the
 * work between them, and the group leaves the loop when all its teams are done (a count read
 * between two barriers, so every work-item reads the same value). The host uses the kernel for
 * rows of at most TK_TEAM x TK_KEYS keys and k up to TK_KMAX (cl/abi.h). */
#define TK_TEAM ABI_TOPK_TEAM(WG_TOPK)
#define TK_TEAMS (WG_TOPK / TK_TEAM)
#define TK_KEYS ABI_TOPK_TEAM_KEYS
#define TK_KMAX ABI_TOPK_TEAM_K
#define TK_BINS 256u
#define TK_BPL (TK_BINS / TK_TEAM) /* the bins a work-item sums and walks */

__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_team(__global const uint *scores, uint key_shift, uint n, uint k, uint Q, __global uint *out)
{
    __local uint hist[TK_TEAMS * TK_BINS];
    __local uint part[WG_TOPK];
    __local uint st[TK_TEAMS * 3];
    __local uint sk[TK_TEAMS * TK_KMAX], sp[TK_TEAMS * TK_KMAX];
    __local uint cnt[TK_TEAMS];
    __local uint ndone;
    uint lid = get_local_id(0), team = lid / TK_TEAM, lane = lid % TK_TEAM;
    uint q = get_group_id(0) * TK_TEAMS + team;
    uint live = q < Q;
    __local uint *h = hist + team * TK_BINS;
    __global const uint *row = scores + (ulong)(live ? q : 0u) * n + key_shift;
    uint key[TK_KEYS];
#pragma unroll
    for (uint j = 0; j < TK_KEYS; j++) {
        uint p = lane + j * TK_TEAM;
        key[j] = live && p < n ? row[p] : 0u;
    }
    for (uint j = 0; j < TK_BPL; j++) h[lane * TK_BPL + j] = 0;
    if (lane == 0) cnt[team] = 0;
    if (lid == 0) ndone = 0;
    /* position digits: those of the largest position, n - 1 */
    uint pbits = n > 1u ? 32u - clz(n - 1u) : 0u, npos = (pbits + 7u) / 8u;
    /* the state, the same in every work-item of a team */
    uint done = !live || n <= k, all = n <= k, pre = 0, left = k, kt = 0, dend = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint pass = 0; pass < 4u + npos; pass++) {
        uint bypos = pass >= 4u;
        uint shift = bypos ? 8u * (npos - 1u - (pass - 4u)) : 24u - 8u * pass;
        uint pmask = bypos ? (shift + 8u >= 32u ? 0u : 0xFFFFFFFFu << (shift + 8u)) : pass ? 0xFFFFFFFFu << (32u - 8u * pass) : 0u;
        /* A: the digit's histogram among the entries that share the prefix */
        if (!done) {
#pragma unroll
            for (uint j = 0; j < TK_KEYS; j++) {
                uint p = lane + j * TK_TEAM, x = key[j];
                if (bypos ? x == kt && p < n && (p & pmask) == pre : x != 0u && (x & pmask) == pre)
                    atomic_inc(&h[((bypos ? p : x) >> shift) & 255u]);
            }
        } else if (pass == 0 && lane == 0) {
            atomic_inc(&ndone); /* no row, or every key survives */
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ndone == TK_TEAMS) break; /* read between two barriers: the group's value */
        /* B: this work-item's bins, the key's from the top, the position's from the bottom */
        uint lo = bypos ? lane * TK_BPL : TK_BINS - (lane + 1u) * TK_BPL, s = 0;
        for (uint j = 0; j < TK_BPL; j++) s += h[lo + j];
        part[lid] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* C: the work-item whose bins hold the left-th entry walks them */
        uint before = 0, total = 0;
        for (uint l = 0; l < TK_TEAM; l++) {
            uint v = part[team * TK_TEAM + l];
            total += v;
            before += l < lane ? v : 0u;
        }
        if (!done && before < left && left <= before + s) {
            uint j = 0, at = before;
            for (uint i = 0; i < TK_BPL; i++) {
                j = bypos ? lo + i : lo + TK_BPL - 1u - i;
                if (at + h[j] >= left) break;
                at += h[j];
            }
            st[team * 3 + 0] = pre | (j << shift);
            st[team * 3 + 1] = left - at;
            st[team * 3 + 2] = h[j] == left - at; /* the bin taken whole */
        }
        for (uint j = 0; j < TK_BPL; j++) h[lo + j] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* D: the next state, alike in the team */
        if (!done) {
            if (!bypos && pass == 0 && total < left) { /* fewer matches than k: all survive */
                all = 1;
                done = 1;
            } else {
                uint npre = st[team * 3 + 0], whole = st[team * 3 + 2];
                left = st[team * 3 + 1];
                if (bypos) { /* ties at kt up to this position prefix's bin (the last digit: one position) */
                    pre = npre;
                    if (whole || shift == 0u) {
                        dend = npre + (1u << shift);
                        done = 1;
                    }
                } else if (whole) { /* every key at or above the bin's least */
                    kt = npre ? npre - 1u : 0u;
                    done = 1;
                } else if (pass == 3u) { /* more keys equal the k-th than are taken: by position */
                    kt = npre;
                    pre = 0;
                } else {
                    pre = npre;
                }
            }
            if (done && lane == 0) atomic_inc(&ndone);
        }
    }

    /* the survivors: key above kt, or equal to it before dend (all: every match) */
#pragma unroll
    for (uint j = 0; j < TK_KEYS; j++) {
        uint p = lane + j * TK_TEAM, x = key[j];
        if (live && x != 0u && p < n && (all || x > kt || (x == kt && p < dend))) {
            uint slot = atomic_inc(&cnt[team]);
            if (slot < TK_KMAX) { /* always, by the select; a bound on the writes all the same */
                sk[team * TK_KMAX + slot] = x;
                sp[team * TK_KMAX + slot] = p;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live) return; /* after the last barrier */
    uint m = min(cnt[team], min(k, TK_KMAX));
    __local const uint *tk = sk + team * TK_KMAX, *tp = sp + team * TK_KMAX;
    __global uint *od = out + ABI_OUT_DOC((ulong)Q, k, q, 0);
    __global uint *os = out + ABI_OUT_SCORE((ulong)Q, k, q, 0);
    if (lane == 0) out[q] = m;
    for (uint i = lane; i < m; i += TK_TEAM) {
        uint x = tk[i], p = tp[i], r = 0;
        for (uint j = 0; j < m; j++) r += topk_before(tk[j], tp[j], x, p);
        od[r] = p;
        os[r] = x & ~ABI_KEY_TIER;
    }
    for (uint r = m + lane; r < k; r += TK_TEAM) {
        od[r] = ABI_NO_DOC;
        os[r] = 0u;
    }
}
