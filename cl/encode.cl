/* encode.cl: posting lists into blocks, the index writer's encoding on a device. The twin of
 * src/index/index_write.c: idx_encode_list (the block layout) and src/codec/codec_<name>.c (each
 * codec's encoder); the host side is src/index/encode_dev.c. Its output equals the host's bit for
 * bit: the same streams, parameter words and block maxima (tests/test_encode_dev.c).
 *
 * The host hands over a chunk: consecutive lists, their postings one after another, and a table
 * of the chunk's blocks (each block's first posting and its list). Then:
 *   1. encode_list_params (pfor only): one work-group a list counts the widths of the list's
 *      stream values (a 33-bin histogram for the gaps, one for the frequencies, local atomics)
 *      and takes the width that 90% of them fit, pfor's list-wide parameter (cdc_list_param);
 *   2. encode_blocks: one work-group a block. It computes the block's gaps and frequencies into
 *      local memory and its max_score (the largest score_contrib, reduced as the bits of positive
 *      floats, which order as the floats do), then codes each stream into local memory and copies
 *      it to its own fixed-size slot of a scratch buffer (2 * ENC_MAX_WORDS words a block), with
 *      the block's record (all but the offset) and its word count. Each codec's encoder makes
 *      the same choices as its C twin, in the same order (ties included), with the work shared
 *      out where the codec allows it: widths by a local OR, width counts by a local histogram,
 *      the bits of every field ORed into the local stream (atomic_or: the fields never overlap, so
 *      the order does not matter and the words come out the same), and the places of exceptions
 *      and of rice's one bits by a work-group prefix sum (common.cl: wg_scan_incl). The cheap
 *      serial choices (optpfd's and rice's best width over 33 candidates) run on work-item 0;
 *   3. encode_offsets: one work-group, a prefix sum of the blocks' word counts in tiles of the
 *      group's width: each block's offset (the words already written before the batch, plus
 *      those of the blocks before it) and the batch's total;
 *   4. encode_compact: one work-group a block copies its words from its scratch slot to its
 *      offset, so the words come out packed as the host writes them.
 * The scratch slots make one encoding pass enough (no sizing pass): a block's streams never
 * exceed cdc_max_words(n) words each.
 *
 * pfor's exception tree (src/codec/codec_pfor.c) is walked in pre-order with an explicit stack
 * (OpenCL C has no recursion): a node's values sit in a local pool, its low part is written at
 * the stream's current word, and its two children (the exceptions' position gaps and high parts
 * minus one) are appended to the pool and pushed, P last so that it is taken first.
 *
 * Build options: BLOCK_SIZE, PFOR_DEPTH, ENCODE_CODEC (a cls_codec value), WG_ENCODE (the
 * work-group's width, a power of two: src/device/clx_params.c), WG_SCAN_ALGO and SCORE_IMPACT
 * as common.cl takes them. */

#ifndef WG_ENCODE
#define WG_ENCODE 64 /* work-items a block in encode_blocks, a list in encode_list_params */
#endif
#ifndef ENCODE_CODEC
#define ENCODE_CODEC 1
#endif
#ifndef PFOR_DEPTH
#define PFOR_DEPTH 1
#endif

/* cls_codec's values (include/clsearch.h: stored in index files, so fixed) */
#define ENC_RAW 0
#define ENC_BP 1
#define ENC_PFOR 2
#define ENC_OPTPFD 3
#define ENC_RICE 4

#define ENC_MAX_WORDS (4u * BLOCK_SIZE + 64u) /* codec.h: cdc_max_words(BLOCK_SIZE), one stream at most */
#define ENC_POOL (4u * BLOCK_SIZE)            /* pfor: the top node's values and its children's (< 2.5n) */
#define ENC_SH 8u                             /* shared scalars of the group */

/* Bits needed for x (0 for 0): codec_*.c's width_of. */
inline uint enc_width(uint x) { return 32u - clz(x); }

/* Words of n values of bw bits: codec_bp.h's bp_words. */
inline uint enc_words(uint n, uint bw) { return (uint)(((ulong)n * bw + 31u) / 32u); }

/* ORs the bw low bits of v (v must fit them) in at bit `bit` of out, as bp_put_bits does;
 * atomically, since neighbouring fields share words. */
inline void enc_put(__local uint *out, uint bit, uint v, uint bw)
{
    if (bw == 0 || v == 0) return;
    uint wi = bit >> 5, sh = bit & 31u;
    ulong x = (ulong)v << sh;
    if ((uint)x) atomic_or(&out[wi], (uint)x);
    if (sh + bw > 32u && (uint)(x >> 32)) atomic_or(&out[wi + 1], (uint)(x >> 32));
}

/* The low bw bits of v (bw 0..32). */
inline uint enc_low(uint v, uint bw) { return bw >= 32u ? v : v & ((1u << bw) - 1u); }

/* The OR of x over the group (every work-item calls it). */
inline uint enc_group_or(__local uint *sh, uint x)
{
    if (get_local_id(0) == 0) sh[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (x) atomic_or(&sh[0], x);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint r = sh[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Work-item lid's run of m values: [*a, *z), contiguous, so that a prefix sum over the runs
 * ranks the values in order. */
inline void enc_run(uint m, uint *a, uint *z)
{
    uint per = (m + WG_ENCODE - 1u) / WG_ENCODE, lid = get_local_id(0);
    *a = min(lid * per, m);
    *z = min(*a + per, m);
}

/* The smallest width that at least ceil(9m/10) of values with width counts cnt[0..33) fit:
 * codec_pfor.c's width90 over the counts. */
inline uint enc_width90(__local const uint *cnt, ulong m)
{
    ulong need = (9u * m + 9u) / 10u, fit = 0;
    for (uint b = 0; b < 32u; b++) {
        fit += cnt[b];
        if (fit >= need) return b;
    }
    return 32u;
}

/* ---- The codecs' encoders ---------------------------------------------------------------
 *
 * encode_stream codes v[0..n) (local, n <= BLOCK_SIZE) into out (local, ENC_MAX_WORDS words,
 * zeroed by the caller) and returns the word count, *param the parameter word, both the same in
 * every work-item. lparam is the list-wide parameter (pfor's width; 0 for the other codecs).
 * pool, scan and sh are its scratch. Every work-item calls it (it holds barriers). */

#if ENCODE_CODEC == ENC_RAW
inline uint encode_stream(__local uint *v, uint n, uint lparam, __local uint *out, __local uint *pool,
                          __local uint *scan, __local uint *sh, uint *param)
{
    for (uint j = get_local_id(0); j < n; j += WG_ENCODE) out[j] = v[j];
    *param = 0;
    return n;
}

#elif ENCODE_CODEC == ENC_BP
inline uint encode_stream(__local uint *v, uint n, uint lparam, __local uint *out, __local uint *pool,
                          __local uint *scan, __local uint *sh, uint *param)
{
    uint all = 0;
    for (uint j = get_local_id(0); j < n; j += WG_ENCODE) all |= v[j];
    uint bw = enc_width(enc_group_or(sh, all));
    for (uint j = get_local_id(0); j < n; j += WG_ENCODE) enc_put(out, j * bw, v[j], bw);
    *param = bw;
    return enc_words(n, bw);
}

#elif ENCODE_CODEC == ENC_OPTPFD
inline uint encode_stream(__local uint *v, uint n, uint lparam, __local uint *out, __local uint *pool,
                          __local uint *scan, __local uint *sh, uint *param)
{
    uint lid = get_local_id(0);
    __local uint *cnt = pool; /* cnt[w]: values of width exactly w */
    for (uint w = lid; w < 33u; w += WG_ENCODE) cnt[w] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint all = 0;
    for (uint j = lid; j < n; j += WG_ENCODE) {
        atomic_inc(&cnt[enc_width(v[j])]);
        all |= v[j];
    }
    uint maxw = enc_width(enc_group_or(sh, all)); /* its barriers end the counting */
    uint pw = n > 1u ? enc_width(n - 1u) : 0u;
    if (lid == 0) { /* codec_optpfd.c's choice: the fewest words, the larger b on a tie */
        uint best_b = 32u, e = 0;
        ulong best_words = ULONG_MAX;
        for (uint b = 33u; b-- > 0u;) {
            if (b < 32u) e += cnt[b + 1u];
            uint hb = e ? maxw - b : 0u;
            ulong bits = (ulong)n * b + (ulong)e * (pw + hb);
            ulong words = (bits + 31u) / 32u;
            if (words < best_words) best_words = words, best_b = b;
        }
        uint ne = 0;
        for (uint w = best_b + 1u; w <= 32u; w++) ne += cnt[w];
        sh[1] = best_b;
        sh[2] = (uint)best_words;
        sh[3] = ne;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint b = sh[1], words = sh[2], ne = sh[3], hb = ne ? maxw - b : 0u;
    uint pbase = n * b, hbase = pbase + ne * pw;
    /* exceptions ranked in order: a run of values a work-item, a prefix sum over the runs */
    uint a, z, mine = 0;
    enc_run(n, &a, &z);
    for (uint j = a; j < z; j++) mine += b < 32u && (v[j] >> b) != 0u;
    uint total;
    uint k = wg_scan_incl(scan, mine, &total) - mine;
    for (uint j = a; j < z; j++) {
        enc_put(out, j * b, enc_low(v[j], b), b);
        if (b < 32u && (v[j] >> b) != 0u) {
            enc_put(out, pbase + k * pw, j, pw);
            enc_put(out, hbase + k * hb, v[j] >> b, hb);
            k++;
        }
    }
    *param = b | hb << 6 | ne << 12;
    return words;
}

#elif ENCODE_CODEC == ENC_RICE
inline uint encode_stream(__local uint *v, uint n, uint lparam, __local uint *out, __local uint *pool,
                          __local uint *scan, __local uint *sh, uint *param)
{
    uint lid = get_local_id(0);
    __local ulong *u_of = (__local ulong *)pool; /* per k: the unary part's bits, n + sum(v >> k); pool is
                                                   * a ulong array's (encode_blocks), so aligned */
    for (uint k = lid; k <= 32u; k += WG_ENCODE) {
        ulong u = n;
        if (k < 32u)
            for (uint j = 0; j < n; j++) u += v[j] >> k;
        u_of[k] = u;
    }
    uint all = 0;
    for (uint j = lid; j < n; j += WG_ENCODE) all |= v[j];
    uint wmax = enc_width(enc_group_or(sh, all)); /* its barriers end the sums */
    if (lid == 0) { /* codec_rice.c's choice: the fewest words, the smaller k on a tie, then the escape */
        uint best_k = 32u;
        ulong best_words = ULONG_MAX, best_u = n;
        for (uint k = 0; k <= 32u; k++) {
            ulong words = enc_words(n, k) + (u_of[k] + 31u) / 32u;
            if (words < best_words) best_words = words, best_k = k, best_u = u_of[k];
        }
        if (n > 0u && enc_words(n, wmax) <= best_words) best_k = wmax, best_u = 0;
        sh[1] = best_k;
        sh[2] = (uint)best_u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint k = sh[1], U = sh[2], nb = enc_words(n, k);
    for (uint j = lid; j < n; j += WG_ENCODE) enc_put(out, j * k, enc_low(v[j], k), k);
    if (U > 0u) { /* value j's one bit at sum(q_0..q_j) + j of the unary part */
        uint a, z, mine = 0;
        enc_run(n, &a, &z);
        for (uint j = a; j < z; j++) mine += k < 32u ? v[j] >> k : 0u;
        uint total;
        uint bit = wg_scan_incl(scan, mine, &total) - mine + a;
        for (uint j = a; j < z; j++) {
            bit += k < 32u ? v[j] >> k : 0u;
            enc_put(out, nb * 32u + bit, 1u, 1u);
            bit++;
        }
    }
    *param = k | U << 8;
    return nb + (U + 31u) / 32u;
}

#elif ENCODE_CODEC == ENC_PFOR
/* A node of the exception tree waiting its turn: its values at pool[off..off+m), its depth, and
 * whether it is a child (a header word, its width by the 90% rule) or the top. */
typedef struct enc_node {
    uint off, m, d, child;
} enc_node;
#define ENC_STACK 8 /* pre-order with depth <= 3 keeps at most 5 nodes waiting */

inline uint encode_stream(__local uint *v, uint n, uint lparam, __local uint *out, __local uint *pool,
                          __local uint *scan, __local uint *sh, uint *param)
{
    uint lid = get_local_id(0);
    __local uint *cnt = sh + ENC_SH; /* 33 width counts, after the shared scalars */
    __local uint *pos = scan + WG_ENCODE; /* a node's exception positions, BLOCK_SIZE words */
    uint depth = min((uint)PFOR_DEPTH, 3u);
    uint all = 0;
    for (uint j = lid; j < n; j += WG_ENCODE) {
        pool[j] = v[j];
        all |= v[j];
    }
    uint maxw = enc_width(enc_group_or(sh, all));
    uint top_b = depth == 0u || lparam > maxw ? maxw : lparam;
    enc_node stack[ENC_STACK];
    uint sp = 0, wpos = 0, top = n, top_param = 0;
    stack[sp++] = (enc_node){0u, n, depth, 0u};
    while (sp > 0u) { /* uniform: every work-item walks the same nodes */
        enc_node nd = stack[--sp];
        __local uint *x = pool + nd.off;
        uint b = top_b;
        if (nd.child) { /* child_encode's width: 90% at depth > 0, else the largest */
            for (uint w = lid; w < 33u; w += WG_ENCODE) cnt[w] = 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            uint o = 0;
            for (uint j = lid; j < nd.m; j += WG_ENCODE) {
                atomic_inc(&cnt[enc_width(x[j])]);
                o |= x[j];
            }
            uint mw = enc_width(enc_group_or(sh, o));
            b = nd.d ? enc_width90(cnt, nd.m) : mw;
        }
        /* the exceptions, ranked in order */
        uint a, z, mine = 0;
        enc_run(nd.m, &a, &z);
        for (uint j = a; j < z; j++) mine += b < 32u && (x[j] >> b) != 0u;
        uint e;
        uint k = wg_scan_incl(scan, mine, &e) - mine;
        if (nd.child) {
            if (lid == 0) out[wpos] = b | e << 8;
            wpos++;
        } else {
            top_param = b | e << 8;
        }
        for (uint j = a; j < z; j++) {
            enc_put(out, wpos * 32u + j * b, enc_low(x[j], b), b);
            if (b < 32u && (x[j] >> b) != 0u) {
                pos[k] = j;
                pool[top + e + k] = (x[j] >> b) - 1u; /* H: high parts minus one */
                k++;
            }
        }
        wpos += enc_words(nd.m, b);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (e > 0u) { /* P: the positions as gaps; then both children wait, P on top */
            for (uint i = lid; i < e; i += WG_ENCODE) pool[top + i] = i ? pos[i] - pos[i - 1] - 1u : pos[i];
            barrier(CLK_LOCAL_MEM_FENCE);
            uint d = nd.d - 1u; /* e > 0 only at depth > 0 */
            stack[sp++] = (enc_node){top + e, e, d, 1u};
            stack[sp++] = (enc_node){top, e, d, 1u};
            top += 2u * e;
        }
    }
    *param = top_param;
    return wpos;
}

#else
#error "ENCODE_CODEC: a cls_codec value (0 raw, 1 bp, 2 pfor, 3 optpfd, 4 rice)"
#endif

/* ---- The kernels -------------------------------------------------------------------------- */

/* pfor's list-wide widths (cdc_list_param) of list g = list0 + group: its postings are
 * [ls[g], ls[g + 1]) of docs and freqs; lparam[2g] receives the width for its gaps (those within
 * blocks: a block's first posting has none), lparam[2g + 1] for its frequencies minus one. */
__kernel __attribute__((reqd_work_group_size(WG_ENCODE, 1, 1)))
void encode_list_params(__global const uint *docs, __global const uint *freqs, __global const uint *ls, uint list0,
                        __global uint *lparam)
{
    __local uint cnt[66];
    uint g = list0 + get_group_id(0), lid = get_local_id(0);
    uint s = ls[g], df = ls[g + 1] - s;
    for (uint w = lid; w < 66u; w += WG_ENCODE) cnt[w] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < df; i += WG_ENCODE) {
        if (i % BLOCK_SIZE) atomic_inc(&cnt[enc_width(docs[s + i] - docs[s + i - 1] - 1u)]);
        atomic_inc(&cnt[33u + enc_width(freqs[s + i] - 1u)]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        uint nblocks = (df + BLOCK_SIZE - 1u) / BLOCK_SIZE;
        lparam[2u * g] = enc_width90(cnt, df - nblocks);
        lparam[2u * g + 1u] = enc_width90(cnt + 33, df);
    }
}

/* Block block0 + group: its first posting bmap[2b] and its list bmap[2b + 1] (postings and ls as
 * encode_list_params takes them); weight: each list's bm25_block_weight; norm: the documents'
 * BM25 norms, use_norm 0 for none (max_score 0). Writes the block's record into meta[group]
 * (offset 0: encode_offsets sets it), its words at scratch[group * stride ..] (docID stream, then
 * frequency stream) and their count into counts[group]. */
__kernel __attribute__((reqd_work_group_size(WG_ENCODE, 1, 1)))
void encode_blocks(__global const uint *docs, __global const uint *freqs, __global const uint *ls,
                   __global const uint *bmap, uint block0, __global const float *weight,
                   __global const uint *lparam, __global const float *norm, uint use_norm,
                   __global idx_block *meta, __global uint *counts, __global uint *scratch, uint stride)
{
    __local uint vals[BLOCK_SIZE], out[ENC_MAX_WORDS], scan[WG_ENCODE + BLOCK_SIZE], sh[ENC_SH + 33];
    __local ulong pool64[ENC_POOL / 2]; /* ulongs: rice reads its sums from it as such, aligned */
    __local uint *pool = (__local uint *)pool64;
    uint g = get_group_id(0), lid = get_local_id(0), blk = block0 + g;
    uint s = bmap[2u * blk], list = bmap[2u * blk + 1u];
    uint n = min((uint)BLOCK_SIZE, ls[list + 1u] - s);
    float w = weight[list];
    /* the gaps, and the block's largest contribution as the bits of a positive float */
    if (lid == 0) sh[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint best = 0;
    for (uint j = lid; j < n; j += WG_ENCODE) {
        uint d = docs[s + j];
        if (j) vals[j - 1u] = d - docs[s + j - 1u] - 1u;
        float c = use_norm ? bm25_contrib(w, freqs[s + j], norm[d]) : 0.0f;
        if (c > 0.0f) best = max(best, as_uint(c));
    }
    if (best) atomic_max(&sh[0], best);
    barrier(CLK_LOCAL_MEM_FENCE);
    best = sh[0];
    for (uint i = lid; i < ENC_MAX_WORDS; i += WG_ENCODE) out[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint *slot = scratch + (ulong)g * stride;
    uint dparam, fparam;
    uint wd = encode_stream(vals, n - 1u, lparam[2u * list], out, pool, scan, sh, &dparam);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < wd; i += WG_ENCODE) {
        slot[i] = out[i];
        out[i] = 0;
    }
    for (uint j = lid; j < n; j += WG_ENCODE) vals[j] = freqs[s + j] - 1u;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint wf = encode_stream(vals, n, lparam[2u * list + 1u], out, pool, scan, sh, &fparam);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < wf; i += WG_ENCODE) slot[wd + i] = out[i];
    if (lid == 0) {
        __global idx_block *m = meta + g;
        m->first = docs[s];
        m->last = docs[s + n - 1u];
        m->offset = 0;
        m->info = (n - 1u) | wd << 10;
        m->dparam = dparam;
        m->fparam = fparam;
        m->max_score = as_float(best);
        m->reserved = 0;
        counts[g] = wd + wf;
    }
}

/* One work-group: offs[i] = the words of blocks 0..i-1 (counts), meta[i].offset = base + offs[i];
 * total[0] = all nblocks' words. */
__kernel __attribute__((reqd_work_group_size(WG_ENCODE, 1, 1)))
void encode_offsets(__global const uint *counts, uint nblocks, uint base, __global idx_block *meta,
                    __global uint *offs, __global uint *total)
{
    __local uint scan[WG_ENCODE];
    uint lid = get_local_id(0), carry = 0;
    for (uint t = 0; t < nblocks; t += WG_ENCODE) { /* uniform trip count */
        uint i = t + lid, c = i < nblocks ? counts[i] : 0u, tot;
        uint ex = carry + wg_scan_incl(scan, c, &tot) - c;
        if (i < nblocks) {
            offs[i] = ex;
            meta[i].offset = base + ex;
        }
        carry += tot;
    }
    if (lid == 0) total[0] = carry;
}

/* Block group's words from its scratch slot to words[offs[group] ..]. */
__kernel __attribute__((reqd_work_group_size(WG_ENCODE, 1, 1)))
void encode_compact(__global const uint *scratch, uint stride, __global const uint *counts,
                    __global const uint *offs, __global uint *words)
{
    uint g = get_group_id(0);
    __global const uint *src = scratch + (ulong)g * stride;
    __global uint *dst = words + offs[g];
    for (uint i = get_local_id(0); i < counts[g]; i += WG_ENCODE) dst[i] = src[i];
}
