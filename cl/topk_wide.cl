/* topk_wide.cl: top-k of a few long dense rows, many work-groups a row.
 *
 * topk_select gives a dense row one work-group: with few rows (bench topk's 1 x 25,000,000, a
 * dense-row caller with one long query) most of the device idles while that group reads the row
 * four times. Here each row is cut into G slices of consecutive positions, one work-group a
 * slice, and the radix select runs over the whole device, three passes of a digit each (bits
 * 31..21, 20..10, 9..0):
 *  topk_wide_hist  (a launch a pass) each slice's histogram of the digit among the keys sharing
 *                  the prefix chosen so far (local atomics), added to the row's global histogram
 *                  of the pass (one global atomic per nonzero bin). The prefix comes from the
 *                  previous pass's histogram: every group finds the bin where the k-th largest key
 *                  falls itself (2,048 bins, a scan), the same for all, and the first group keeps
 *                  the row's state after it for the next pass; so no launch picks the bin, and
 *                  every pass has a histogram of its own (no clearing between passes). With fewer
 *                  than k keys in the row (key 0 is no match) every key survives. The last pass
 *                  also keeps each slice's own histogram (1,024 bins), from which a slice learns
 *                  how many keys equal to the threshold T lie before it;
 *  topk_wide_keep  T from the last histogram; every key > T and the first `need` keys == T
 *                  (position = docID in a dense row, the smallest docIDs win ties: the ties of
 *                  the slices before come from their histograms, a scan orders the slice's own)
 *                  to the row's survivors (at most k, in any order), whose count is the row's
 *                  segment length;
 *  topk_wide_rank  the survivors (at most k a row, positions distinct) put in order by counting:
 *                  each survivor counts the survivors ranked before it (key desc, position asc),
 *                  which is its output slot. Groups: rows x B x B, B = ceil(k / WG_TOPK): each
 *                  block of WG_TOPK survivors against each block, read into local memory; with
 *                  one block (k <= WG_TOPK) the count is the slot and the group writes the output,
 *                  else the groups add their counts to the row's ranks (global atomics) and
 *  topk_wide_place writes each survivor to its slot.
 * A bitonic sort of k = 10,000 survivors in one work-group takes 105 stages, each a barrier over
 * global memory; counting is k^2 comparisons spread over the whole device, and exact because
 * no two survivors rank alike. The output is the one topk_select gives the dense row itself.
 * Launches: init, three passes, keep, rank (and place where k > WG_TOPK); between dependent
 * launches the device idles, so they are as few as the passes allow.
 *
 * The per-row state (st, TW_STATE words a row): four words before the first pass and after each
 * of the first two, (prefix chosen so far, keys still to take at or below it, 1 when every key
 * survives, keys in the chosen bin). topk_wide_init sets the first and the segments, and zeroes
 * the histograms and ranks.
 *
 * Every barrier-holding loop has a trip count that is the group's and sits under no condition:
 * POCL mishandles barriers under branches. */

#define TW_BINS ABI_TOPK_BINS
#define TW_STATE ABI_TOPK_WIDE_STATE
#define TW_TIES ABI_TOPK_WIDE_TIES /* the last pass's bins */
/* one work buffer for R rows: their states, their histograms (three a row), their slices' last
 * histograms (G a row), their survivors' ranks (k a row, where topk_wide_rank has B > 1) */
#define TW_ST(w) (w)
#define TW_HIST(w, R) ((w) + (ulong)(R) * TW_STATE)
#define TW_EQC(w, R) ((w) + (ulong)(R) * (TW_STATE + 3 * TW_BINS))
#define TW_RANK(w, R, G) ((w) + (ulong)(R) * (TW_STATE + 3 * TW_BINS + (ulong)(G) * TW_TIES))

/* pass 0..2: the digit's shift and width, and the bits above it (the prefix): topk.cl's
 * topk_digit_shift, topk_digit_mask, topk_prefix_mask (the program puts topk.cl first) */

/* slice g of a row of n keys cut into G: [*lo, *hi) */
inline void tw_slice(uint n, uint G, uint g, uint *lo, uint *hi)
{
    uint len = (n + G - 1) / G;
    ulong a = (ulong)g * len, b = a + len;
    *lo = a < n ? (uint)a : n;
    *hi = b < n ? (uint)b : n;
}

/* The state after pass `pass` (o) from the one before it (in) and the pass's histogram h: the bin
 * holding the left-th largest key among those sharing the prefix; run 0: in itself. Every
 * work-item of the group calls it (barriers, outside any branch) and gets the same state. */
inline void tw_pick(__global const uint *h, uint pass, __global const uint *in, uint *o, __local uint *scan,
                    __local uint *sh, uint run)
{
    uint lid = get_local_id(0);
    const uint per = (TW_BINS + WG_TOPK - 1) / WG_TOPK; /* bins a work-item sums, from the top */
    uint hi = TW_BINS - min(TW_BINS, lid * per), lo = TW_BINS - min(TW_BINS, (lid + 1) * per);
    uint prefix = in[0], left = in[1], all = in[2], s = 0;
    if (!run) hi = lo;
    for (uint j = lo; j < hi; j++) s += h[j];
    uint tot, incl = wg_scan_incl(scan, s, &tot), above = incl - s;
    if (run && !all && above < left && left <= incl) {
        uint j = hi;
        while (j > lo) {
            j--;
            if (above + h[j] >= left) break;
            above += h[j];
        }
        sh[0] = prefix | (j << topk_digit_shift(pass));
        sh[1] = left - above;
        sh[2] = h[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint none = !run || all;
    all = all || (run && tot < left); /* fewer than k keys (pass 0 only): all survive */
    o[0] = none || all ? prefix : sh[0];
    o[1] = none || all ? left : sh[1];
    o[2] = all;
    o[3] = none ? in[3] : all ? 0u : sh[2];
    barrier(CLK_LOCAL_MEM_FENCE); /* sh read by all before a later pick rewrites it */
}

/* one group a row: the state before the first pass, the segment (start q * k, no survivors yet),
 * the histograms and (ranks: 1) the survivors' ranks zeroed */
__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_wide_init(uint n, uint k, uint G, uint R, uint ranks, __global uint *work, __global uint *seg)
{
    __global uint *st = TW_ST(work), *hist = TW_HIST(work, R), *rk = TW_RANK(work, R, G);
    uint q = get_group_id(0), lid = get_local_id(0);
    if (lid == 0) {
        st[q * TW_STATE + 0] = 0;
        st[q * TW_STATE + 1] = k;
        st[q * TW_STATE + 2] = n <= k; /* at most k keys: all of them survive */
        st[q * TW_STATE + 3] = 0;
        seg[2 * q] = q * k;
        seg[2 * q + 1] = 0;
    }
    for (uint j = lid; j < 3 * TW_BINS; j += WG_TOPK) hist[(ulong)q * 3 * TW_BINS + j] = 0;
    for (uint j = lid; ranks && j < k; j += WG_TOPK) rk[(ulong)q * k + j] = 0;
}

/* groups: rows x G; group q * G + g histograms slice g of row q for pass `pass` */
__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_wide_hist(__global const uint *scores, uint key_shift, uint n, uint G, uint pass,
                    uint R, __global uint *work)
{
    __global uint *st = TW_ST(work), *eqc = TW_EQC(work, R);
    __global uint *hist = TW_HIST(work, R);
    __local uint lh[TW_BINS];
    __local uint scan[WG_TOPK];
    __local uint sh[3];
    uint q = get_group_id(0) / G, g = get_group_id(0) % G, lid = get_local_id(0);
    __global uint *rst = st + q * TW_STATE, *rh = hist + (ulong)q * 3 * TW_BINS;
    uint cur[4], pp = pass ? pass - 1u : 0u; /* pass 0: the state init set, no pick */
    tw_pick(rh + pp * TW_BINS, pp, rst + 4 * pp, cur, scan, sh, pass > 0);
    if (pass > 0 && g == 0 && lid == 0)
        for (uint i = 0; i < 4; i++) rst[4 * pass + i] = cur[i]; /* read by the next launches */
    uint prefix = cur[0], all = cur[2];
    uint shift = topk_digit_shift(pass), dmask = topk_digit_mask(pass), pmask = topk_prefix_mask(pass);
    uint lo, hi;
    tw_slice(n, G, g, &lo, &hi);
    if (all) hi = lo; /* nothing left to choose: an empty slice, same barriers */
    __global const uint *sc = scores + (ulong)q * n + key_shift;
    for (uint j = lid; j < TW_BINS; j += WG_TOPK) lh[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lo + lid; i < hi; i += WG_TOPK) {
        uint key = sc[i];
        if (key != 0 && (key & pmask) == prefix) atomic_inc(&lh[(key >> shift) & dmask]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint *h = rh + pass * TW_BINS;
    for (uint j = lid; j < TW_BINS; j += WG_TOPK) {
        uint c = lh[j];
        if (c) atomic_add(&h[j], c);
    }
    if (pass == 2) /* the slice's own last digits, every bin: the keys equal to each T */
        for (uint j = lid; j < TW_TIES; j += WG_TOPK) eqc[((ulong)q * G + g) * TW_TIES + j] = lh[j];
}

/* groups: rows x G; slice g's survivors appended to row q's segment (keys to skey, positions
 * to sdoc, at seg[2q] + a slot counted in seg[2q + 1]) */
__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_wide_keep(__global const uint *scores, uint key_shift, uint n, uint G, uint k, uint R,
                    __global uint *work, __global uint *seg, __global uint *sdoc, __global uint *skey)
{
    __global const uint *st = TW_ST(work), *hist = TW_HIST(work, R), *eqc = TW_EQC(work, R);
    __local uint scan[WG_TOPK];
    __local uint sh[3];
    __local uint before;
    uint q = get_group_id(0) / G, g = get_group_id(0) % G, lid = get_local_id(0);
    uint fin[4];
    tw_pick(hist + ((ulong)q * 3 + 2) * TW_BINS, 2, st + q * TW_STATE + 8, fin, scan, sh, 1);
    uint all = fin[2];
    uint T = all ? 1u : fin[0];                /* every nonzero key is >= 1 */
    uint need = all ? 0xFFFFFFFFu : fin[1];
    uint rank = !all && fin[3] > need;         /* more keys equal T than are taken: by position */
    uint lo, hi;
    tw_slice(n, G, g, &lo, &hi);
    __global const uint *sc = scores + (ulong)q * n + key_shift;
    __global uint *cnt = &seg[2 * q + 1];
    ulong at = seg[2 * q];

    /* keys > T, and every key == T where all ties are taken: no order among survivors */
    for (uint i = lo + lid; i < hi; i += WG_TOPK) {
        uint key = sc[i];
        if (key != 0 && (key > T || (!rank && key == T))) {
            uint slot = atomic_inc(cnt);
            if (slot < k) { /* always, by the select; a bound on the writes all the same */
                sdoc[at + slot] = i;
                skey[at + slot] = key;
            }
        }
    }

    /* ranked ties: those of the slices before (their last histograms), then a scan of the slice
     * in position order */
    if (lid == 0) before = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint b = 0;
    for (uint j = lid; rank && j < g; j += WG_TOPK) b += eqc[((ulong)q * G + j) * TW_TIES + (T & (TW_TIES - 1u))];
    if (b) atomic_add(&before, b);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint ties = before;
    uint chunks = rank ? (hi - lo + WG_TOPK - 1) / WG_TOPK : 0; /* the group's: uniform */
    for (uint c = 0; c < chunks; c++) {
        uint i = lo + c * WG_TOPK + lid;
        uint key = i < hi ? sc[i] : 0u;
        uint eq = key != 0 && key == T, tot;
        uint r = wg_scan_incl(scan, eq, &tot) - eq + ties;
        if (eq && r < need) {
            uint slot = atomic_inc(cnt);
            if (slot < k) {
                sdoc[at + slot] = i;
                skey[at + slot] = key;
            }
        }
        ties += tot;
    }
}

/* The output slots [lo, hi) of row q past its m survivors: no document, score 0. */
inline void tw_empty(__global uint *out, uint Q, uint k, uint q, uint m, uint lo, uint hi)
{
    __global uint *od = out + ABI_OUT_DOC((ulong)Q, k, q, 0);
    __global uint *os = out + ABI_OUT_SCORE((ulong)Q, k, q, 0);
    for (uint r = max(lo, m) + get_local_id(0); r < hi; r += WG_TOPK) {
        od[r] = ABI_NO_DOC;
        os[r] = 0u;
    }
}

/* groups: R x B x B (B = ceil(k / WG_TOPK) blocks of survivors); group (q, b, s) counts, for
 * survivor b * WG_TOPK + lid of row q, the survivors of block s ranked before it. B = 1: that is
 * its slot, and the group writes the row's slots; else the count is added to its rank. */
__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_wide_rank(uint k, uint R, uint G, uint B, __global uint *work, __global const uint *seg,
                    __global const uint *sdoc, __global const uint *skey, __global uint *out)
{
    __local uint tk[WG_TOPK], tp[WG_TOPK];
    uint lid = get_local_id(0), grp = get_group_id(0);
    uint q = grp / (B * B), b = grp / B % B, s = grp % B;
    uint m = min(seg[2 * q + 1], k);
    ulong at = seg[2 * q];
    uint i = b * WG_TOPK + lid, j = s * WG_TOPK + lid;
    uint x = i < m ? skey[at + i] : 0u, p = i < m ? sdoc[at + i] : 0u;
    tk[lid] = j < m ? skey[at + j] : 0u; /* past the survivors: key 0 ranks after every one */
    tp[lid] = j < m ? sdoc[at + j] : 0xFFFFFFFFu;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = 0;
    for (uint t = 0; t < WG_TOPK; t++) r += topk_before(tk[t], tp[t], x, p);
    if (B == 1) {
        if (i < m) {
            out[ABI_OUT_DOC((ulong)R, k, q, r)] = p;
            out[ABI_OUT_SCORE((ulong)R, k, q, r)] = x & ~ABI_KEY_TIER;
        }
        if (b == 0 && lid == 0) out[q] = m;
        tw_empty(out, R, k, q, m, 0, k);
    } else if (i < m && r) {
        atomic_add(&TW_RANK(work, R, G)[(ulong)q * k + i], r);
    }
}

/* groups: R x B; survivor b * WG_TOPK + lid of row q to the slot its counts add up to, and the
 * block's slots past the survivors emptied */
__kernel __attribute__((reqd_work_group_size(WG_TOPK, 1, 1)))
void topk_wide_place(uint k, uint R, uint G, uint B, __global const uint *work, __global const uint *seg,
                     __global const uint *sdoc, __global const uint *skey, __global uint *out)
{
    uint lid = get_local_id(0), q = get_group_id(0) / B, b = get_group_id(0) % B;
    uint m = min(seg[2 * q + 1], k), i = b * WG_TOPK + lid;
    ulong at = seg[2 * q];
    if (i < m) {
        uint r = TW_RANK(work, R, G)[(ulong)q * k + i];
        out[ABI_OUT_DOC((ulong)R, k, q, r)] = sdoc[at + i];
        out[ABI_OUT_SCORE((ulong)R, k, q, r)] = skey[at + i] & ~ABI_KEY_TIER;
    }
    if (b == 0 && lid == 0) out[q] = m;
    tw_empty(out, R, k, q, m, b * WG_TOPK, min(k, (b + 1) * WG_TOPK));
}
