/* common.cl: what every kernel family shares. The host builds one program from common.cl
 * followed by the family files (decode, intersect, score, topk), with parameters as -D
 * options; each default below is what a build without that option gets.
 *
 * Device differences live here as macros and feature tests, never as host-side algorithms. */

/* Scores must be bit-identical to the plain-C reference (src/index.h: bm25_contrib), so no
 * contraction into fused multiply-adds; the host adds -cl-fp32-correctly-rounded-divide-sqrt
 * where the device supports it, making the one division correctly rounded as in C. */
#pragma OPENCL FP_CONTRACT OFF

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 128   /* postings per index block; fixed by the index file */
#endif
#ifndef WG_INTERSECT
#define WG_INTERSECT 128 /* work-items per query in intersect_and */
#endif
#ifndef WG_SCORE
#define WG_SCORE 128     /* work-items per query in score_and / score_or */
#endif
#ifndef WG_TOPK
#define WG_TOPK 256      /* work-items per query in topk_select */
#endif

/* Value i of a stream of bw-bit values packed LSB-first in 32-bit words (src/codec_bp.c:
 * bp_get is the reference). A value may straddle two words; bw 0 holds nothing. */
inline uint bits_get(__global const uint *w, uint i, uint bw)
{
    if (bw == 0) return 0;
    uint bit = i * bw; /* i < BLOCK_SIZE and bw <= 32: no overflow */
    uint wi = bit >> 5, sh = bit & 31;
    ulong x = w[wi];
    if (sh + bw > 32) x |= (ulong)w[wi + 1] << 32;
    x >>= sh;
    return bw == 32 ? (uint)x : (uint)x & ((1u << bw) - 1u);
}

/* Work-group inclusive prefix sum of x (Hillis-Steele: log2(n) steps, n = local size).
 * buf holds local-size elements; *total receives the sum over the work-group. Every
 * work-item of the group must call it (it holds barriers). */
inline uint wg_scan_incl(__local uint *buf, uint x, uint *total)
{
    uint lid = get_local_id(0), n = get_local_size(0);
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < n; off <<= 1) {
        uint t = lid >= off ? buf[lid - off] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        buf[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint r = buf[lid];
    *total = buf[n - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* First position in sorted a[0..n) whose value is >= key. */
inline uint lower_bound(__global const uint *a, uint n, uint key)
{
    uint lo = 0, hi = n;
    while (lo < hi) {
        uint mid = lo + ((hi - lo) >> 1);
        if (a[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* BM25 of one posting: w is idf times query weight, norm is k1 * (1 - b + b * dl / avgdl).
 * Same operations, same order as bm25_contrib in src/index.h. */
inline float bm25_contrib(float w, uint tf, float norm)
{
    float f = (float)tf;
    return (w * f) / (f + norm);
}

/* Query descriptors, written by the host into the batch input buffer:
 *   qinfo[4q..4q+3] = term_start, num_terms, cand_offset, flags (QF_EMPTY: matches nothing)
 *   qterm[4t..4t+3] = list_offset, list_length, weight (float bits), reserved
 * Decoded lists live at list_offset in the decoded docs/freqs buffers. */
#define QF_EMPTY 1u
