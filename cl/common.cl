/* common.cl: what every kernel family shares. The host builds each program from abi.h (the
 * layouts shared with the host), common.cl and the program's family files, with parameters as
 * -D options; each default below is what a build without that option gets.
 *
 * Device differences live here as macros and feature tests, never as host-side algorithms. */

/* CLS_POCL: 1 where POCL compiles the program (the host's clx_compiler_defines): a kernel takes
 * a form POCL's work-group formation needs where the plain form costs the GPUs (cl/topk.cl's
 * topk_rows). */
#ifndef CLS_POCL
#define CLS_POCL 0
#endif

/* Scores must be bit-identical to the plain-C reference (src/index/bm25.h: bm25_contrib), so no
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
#define WG_TOPK 256      /* work-items per query in topk_select and topk_rows */
#endif

/* The one bit reader of the device decoders. Streams pack bits LSB-first in 32-bit words (bit
 * j is bit j % 32 of word j / 32).
 *
 * bits_at: the bw bits (0..32) at bit offset `bit` of w; they may straddle two words, and bw 0
 * reads nothing (src/codec/codec_bp.c: bp_get_bits is the reference). It never reads past
 * w[last], whatever the offset: a stream's words are verified on the host only by
 * `clsearch check`, so a forged one may ask for any bit; such a read returns a wrong value, never
 * a fault (a width over 32 likewise: OpenCL masks shift counts). On a valid stream the clamps
 * change nothing. Bit offsets of a valid stream stay far below 2^32 (a stream is at most
 * 4 * BLOCK_SIZE + 64 words: codec.h's cdc_max_words); a forged one may wrap them, which
 * the clamp makes harmless. */
inline uint bits_at(__global const uint *w, uint last, uint bit, uint bw)
{
    if (bw == 0) return 0;
    uint wi = bit >> 5, sh = bit & 31;
    ulong x = w[min(wi, last)];
    if (sh + bw > 32) x |= (ulong)w[min(wi + 1, last)] << 32;
    x >>= sh;
    return bw == 32 ? (uint)x : (uint)x & ((1u << bw) - 1u);
}

/* bits_get: value i of a stream of bw-bit values (bp_get is the reference). */
inline uint bits_get(__global const uint *w, uint last, uint i, uint bw) { return bits_at(w, last, i * bw, bw); }

/* ---- Work-group prefix sum: the primitive under decoding, intersection and top-k -------
 *
 * wg_scan_incl(buf, x, &total) returns the inclusive prefix sum of x over the work-group and
 * the group's total. buf holds local-size uints; every work-item of the group must call it
 * (it holds barriers); the local size is a power of two. WG_SCAN_ALGO picks the variant:
 *   0  Hillis-Steele: log2(n) steps, every item adding at each step (as the batched-
 *      intersection paper uses): n log2(n) additions, 2 barriers a step;
 *   1  work-efficient up-sweep/down-sweep (Blelloch): 2(n-1) additions, 2 log2(n) barriers;
 *   2  warp shuffles through NVIDIA's inline PTX (shfl.sync.up): each 32-item warp scans in
 *      registers without barriers, one warp scans the warp totals, 2 barriers in all. Only
 *      where the compiler is NVIDIA's (feature test below); elsewhere the build fails with a
 *      message rather than falling back silently. Needs n a multiple of 32, at most 1024. */
#ifndef WG_SCAN_ALGO
#define WG_SCAN_ALGO 0
#endif

#if WG_SCAN_ALGO == 2
#if !defined(cl_nv_pragma_unroll) && !defined(cl_nv_device_attribute_query)
#error "WG_SCAN_ALGO=2 (warp shuffles in inline PTX) needs NVIDIA's OpenCL compiler"
#endif
/* Inclusive scan of x across the 32 lanes of this work-item's warp. */
inline uint warp_scan_incl(uint x, uint lane)
{
    for (uint off = 1; off < 32; off <<= 1) {
        uint y;
        asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(y) : "r"(x), "r"(off));
        if (lane >= off) x += y;
    }
    return x;
}
#endif

inline uint wg_scan_incl(__local uint *buf, uint x, uint *total)
{
    uint lid = get_local_id(0), n = get_local_size(0);
#if WG_SCAN_ALGO == 0
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
#elif WG_SCAN_ALGO == 1
    buf[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = 1; d < n; d <<= 1) { /* up-sweep: partial sums in place */
        uint i = (lid + 1) * 2 * d - 1;
        if (i < n) buf[i] += buf[i - d];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint tot = buf[n - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) buf[n - 1] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = n >> 1; d >= 1; d >>= 1) { /* down-sweep: exclusive sums */
        uint i = (lid + 1) * 2 * d - 1;
        if (i < n) {
            uint t = buf[i - d];
            buf[i - d] = buf[i];
            buf[i] += t;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint r = buf[lid] + x;
    *total = tot;
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#elif WG_SCAN_ALGO == 2
    uint lane = lid & 31u, warp = lid >> 5, nw = n >> 5;
    uint v = warp_scan_incl(x, lane);
    if (lane == 31u) buf[warp] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (warp == 0) {
        uint w = lane < nw ? buf[lane] : 0u;
        w = warp_scan_incl(w, lane);
        if (lane < nw) buf[lane] = w; /* each lane rewrites only the slot it read */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = v + (warp ? buf[warp - 1] : 0u);
    *total = buf[nw - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#else
#error "WG_SCAN_ALGO must be 0, 1 or 2"
#endif
}

/* ---- The k-th largest of a group's keys: radix select ----------------------------------
 *
 * wg_kth_key ranks count 32-bit keys at keys[i * stride] (0 is no key and never counts), larger
 * first: four passes, each building a 256-bin histogram of the next 8 bits (local atomics) among
 * the keys that share the prefix chosen so far. It sets *T to the k-th largest key and *need to
 * how many keys equal to T are among the k largest; with at most k keys (count <= k, or fewer
 * than k nonzero ones) every key is among them: *T = 1, *need = 0xFFFFFFFF. Every work-item of
 * the group calls it (it holds barriers); hist holds ABI_KTH_BINS uints, sh 3. topk_select ranks
 * candidates' scores with it; select_blocks (ABI_SKIP_TOP) blocks' max_score. wg_kth_key_local is
 * the same for keys in local memory (or_score: a partition's accumulators); one body, made for each
 * address space by DEFINE_WG_KTH_KEY, since OpenCL C 1.2 has no generic pointers. */
#define DEFINE_WG_KTH_KEY(NAME, SPACE)                                                         \
inline void NAME(SPACE const uint *keys, uint stride, uint count, uint k, __local uint *hist,  \
                       __local uint *sh, uint *T, uint *need)                                  \
{                                                                                              \
    uint lid = get_local_id(0), n = get_local_size(0);                                         \
    if (lid == 0) {                                                                            \
        sh[0] = 0; /* the prefix chosen so far */                                              \
        sh[1] = k; /* keys still to take at or below it */                                     \
        sh[2] = 0; /* 1: fewer than k keys */                                                  \
    }                                                                                          \
    uint mask = 0;                                                                             \
    /* uniform trip count: count and k are the group's */                                      \
    for (int shift = count <= k ? -8 : 24; shift >= 0; shift -= 8) {                           \
        for (uint j = lid; j < ABI_KTH_BINS; j += n) hist[j] = 0;                              \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        uint prefix = sh[0];                                                                   \
        for (uint i = lid; i < count; i += n) {                                                \
            uint key = keys[(ulong)i * stride];                                                \
            if (key != 0 && (key & mask) == prefix) atomic_inc(&hist[(key >> shift) & 255u]);  \
        }                                                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        if (lid == 0) {                                                                        \
            uint left = sh[1], above = 0;                                                      \
            int bin = 255;                                                                     \
            for (; bin >= 0; bin--) {                                                          \
                if (above + hist[bin] >= left) break;                                          \
                above += hist[bin];                                                            \
            }                                                                                  \
            if (bin < 0) {                                                                     \
                sh[2] = 1;                                                                     \
            } else {                                                                           \
                sh[0] = prefix | ((uint)bin << shift);                                         \
                sh[1] = left - above;                                                          \
            }                                                                                  \
        }                                                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        if (sh[2]) break; /* uniform: read after the barrier */                                \
        mask |= 255u << shift;                                                                 \
    }                                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE); /* the initial values, when no pass ran */                   \
    uint all = count <= k || sh[2];                                                            \
    *T = all ? 1u : sh[0];                                                                     \
    *need = all ? 0xFFFFFFFFu : sh[1];                                                         \
    barrier(CLK_LOCAL_MEM_FENCE); /* sh is read by all before a later call rewrites it */      \
}
DEFINE_WG_KTH_KEY(wg_kth_key, __global)
DEFINE_WG_KTH_KEY(wg_kth_key_local, __local)

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

/* One posting's score. BM25: w is idf times query weight, norm is k1 * (1 - b + b * dl / avgdl).
 * An impact index (the host builds both programs with -DSCORE_IMPACT=1): w is the query weight,
 * tf the quantized impact, and norm plays no part. Same operations, same order as bm25_contrib
 * and impact_contrib in src/index/bm25.h. */
#ifndef SCORE_IMPACT
#define SCORE_IMPACT 0
#endif

/* 1 in the engine's check program only (cl/decode.cl: check_blocks): the decoders then also test
 * every rule of their host twins' strict decoders. */
#ifndef DECODE_CHECK
#define DECODE_CHECK 0
#endif
inline float bm25_contrib(float w, uint tf, float norm)
{
    float f = (float)tf;
#if SCORE_IMPACT
    (void)norm;
    return w * f;
#else
    return (w * f) / (f + norm);
#endif
}

/* The batch input buffer holds record arrays (cl/abi.h) one after another; kernels get the word
 * offset of each and read records through these. */
#define QUERY_AT(in, base, q) ((__global const abi_query *)((in) + (base)) + (q))
#define TERMS_AT(in, base, t) ((__global const abi_term *)((in) + (base)) + (t))
#define SKIPS_AT(in, base, s) ((__global const abi_skip *)((in) + (base)) + (s))
#define BOUNDS_AT(in, base, s) ((__global const abi_bound *)((in) + (base)) + (s))
#define UNITS_AT(in, base, u) ((__global const abi_unit *)((in) + (base)) + (u))
#define OLISTS_AT(in, base, l) ((__global const abi_olist *)((in) + (base)) + (l))
