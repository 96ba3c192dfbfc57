/* decode.cl: posting-list blocks to docIDs and frequencies, for every codec.
 *
 * One work-group decodes one block (BLOCK_SIZE work-items, one posting each): the localized
 * prefix sum of Ding et al. The group first decodes the block's docID stream (n-1 gaps) into
 * local memory with the index's codec, then runs a prefix sum over x_0 = 0, x_i = gap_i + 1:
 * docID_i = first + sum. The first docID is in the block's metadata, so blocks decode
 * independently and any subset of them can be decoded. The frequency stream (n values
 * tf - 1) is decoded the same way, without the prefix sum.
 *
 * The codec is fixed per index and arrives as -DCODEC=n (cls_codec's values); each codec
 * supplies decode_stream(), which every work-item of the group calls (it may hold barriers)
 * and which leaves value j of the stream in vals[j] for j < n. src/codec_*.c hold the plain-C
 * twins; docs/FORMAT.md the layouts. Streams reaching the device were verified on the host
 * when the index was opened, so nothing here bounds-checks.
 *
 * Work-group g decodes the abi_task at word task_base of tasks + g: block metadata (idx_block)
 * and output position (cl/abi.h). */

#define CODEC_RAW 0
#define CODEC_BP 1
#define CODEC_PFOR 2
#define CODEC_OPTPFD 3
#define CODEC_RICE 4
#ifndef CODEC
#define CODEC CODEC_BP
#endif
#ifndef PFOR_DEPTH
#define PFOR_DEPTH 1     /* pfor: levels of recursive exception coding (index header) */
#endif

#if CODEC == CODEC_RAW
/* raw: one word per value. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = w[j];
}

#elif CODEC == CODEC_BP
/* bp: param is the bit width. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, j, param);
}

#elif CODEC == CODEC_PFOR
/* pfor (src/codec_pfor.c): a tree of nodes; the top node's b | e << 8 is param, every child
 * node starts with a header word b | e << 8. Node k: low part (bit-packed, width b), then if
 * e > 0 its P child (exception positions as gaps) and H child (high parts - 1), in pre-order.
 *
 * Decoding: work-item 0 walks the headers (at most 2^(PFOR_DEPTH+1) - 1 nodes) into a local
 * table; every node's low part is unpacked in parallel (the top's into vals, the children's
 * into `kids`, at most 3 * BLOCK_SIZE values in all, which the host verified); then, children
 * before parents (reverse pre-order), each node with exceptions turns its P child's gaps into
 * positions with a work-group scan (e <= m <= n <= BLOCK_SIZE: one element per work-item)
 * and ORs (H + 1) << b into the exception slots. */
#if PFOR_DEPTH == 0
/* No exceptions at depth 0: the top node is plain bit-packing at width b. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    uint b = param & 0xFFu;
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, j, b);
}
#else
#define PFOR_NODES ((2 << PFOR_DEPTH) - 1)
/* node table fields, each PFOR_NODES entries: word offset of the low part, value count,
 * width, exception count, offset of the values in kids, P child, H child; then the count */
#define PF_WOFF 0
#define PF_M 1
#define PF_B 2
#define PF_E 3
#define PF_BASE 4
#define PF_PC 5
#define PF_HC 6
#define PF_FIELDS 7
#define PF_TAB(f, k) tab[(f) * PFOR_NODES + (k)]
#define PF_TAB_SIZE (PF_FIELDS * PFOR_NODES + 1)
/* scratch: scan buffer (BLOCK_SIZE) | node table | child values (3 * BLOCK_SIZE) */
#define DECODE_SCRATCH (BLOCK_SIZE + PF_TAB_SIZE + 3 * BLOCK_SIZE)
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    uint lid = get_local_id(0);
    __local uint *tab = scratch + BLOCK_SIZE;
    __local uint *kids = tab + PF_TAB_SIZE;
    if (lid == 0) {
        /* pre-order walk; the stack holds the pending children as parent << 1 | (1: H) */
        uint stk[PFOR_DEPTH + 2], dep[PFOR_NODES];
        uint sp = 0, cnt = 1, base = 0;
        uint b = param & 0xFFu, e = (param >> 8) & 0x3FFu;
        PF_TAB(PF_WOFF, 0) = 0; PF_TAB(PF_M, 0) = n; PF_TAB(PF_B, 0) = b; PF_TAB(PF_E, 0) = e;
        PF_TAB(PF_BASE, 0) = 0;
        dep[0] = PFOR_DEPTH;
        uint at = (n * b + 31) >> 5;
        if (e) { stk[sp++] = 1; stk[sp++] = 0; }
        while (sp > 0 && cnt < PFOR_NODES) {
            uint it = stk[--sp], par = it >> 1, k = cnt++;
            uint hdr = w[at++], m = PF_TAB(PF_E, par);
            b = hdr & 0xFFu;
            e = (hdr >> 8) & 0x3FFu;
            PF_TAB(PF_WOFF, k) = at; PF_TAB(PF_M, k) = m; PF_TAB(PF_B, k) = b; PF_TAB(PF_E, k) = e;
            PF_TAB(PF_BASE, k) = base;
            PF_TAB((it & 1) ? PF_HC : PF_PC, par) = k;
            dep[k] = dep[par] - 1;
            base += m;
            at += (m * b + 31) >> 5;
            if (e && dep[k] > 0) { stk[sp++] = k << 1 | 1; stk[sp++] = k << 1; }
        }
        PF_TAB(PF_FIELDS, 0) = cnt; /* the slot after the table */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint cnt = PF_TAB(PF_FIELDS, 0);
    for (uint k = 0; k < cnt; k++) {
        uint m = PF_TAB(PF_M, k), b = PF_TAB(PF_B, k);
        __global const uint *lw = w + PF_TAB(PF_WOFF, k);
        __local uint *dst = k ? kids + PF_TAB(PF_BASE, k) : vals;
        for (uint j = lid; j < m; j += BLOCK_SIZE) dst[j] = bits_get(lw, j, b);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = cnt; k-- > 0;) {
        uint e = PF_TAB(PF_E, k);
        if (e == 0) continue; /* uniform: every work-item reads the same table */
        uint b = PF_TAB(PF_B, k);
        __local uint *dst = k ? kids + PF_TAB(PF_BASE, k) : vals;
        __local const uint *gp = kids + PF_TAB(PF_BASE, PF_TAB(PF_PC, k));
        __local const uint *hp = kids + PF_TAB(PF_BASE, PF_TAB(PF_HC, k));
        uint g = lid < e ? gp[lid] : 0, tot;
        uint p = wg_scan_incl(scratch, g, &tot) + lid; /* p_i = g_0 + ... + g_i + i */
        if (lid < e) dst[p] |= (hp[lid] + 1) << b;     /* e > 0: b < 32 */
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
#endif

#elif CODEC == CODEC_OPTPFD
/* optpfd (src/codec_optpfd.c): param = b | hb << 6 | e << 12; one bit stream of n slots of
 * b bits, e positions of pw = width(n-1) bits, e high parts of hb bits. Each work-item unpacks
 * its slots; after a barrier, work-item i < e ORs high_i << b into slot pos_i (positions are
 * distinct, so no two work-items write the same slot). */
#define DECODE_SCRATCH 1
/* bw bits at bit offset `bit` of w (bits_get with a bit offset instead of an index). */
inline uint bits_at(__global const uint *w, uint bit, uint bw)
{
    if (bw == 0) return 0;
    uint wi = bit >> 5, sh = bit & 31;
    ulong x = w[wi];
    if (sh + bw > 32) x |= (ulong)w[wi + 1] << 32;
    x >>= sh;
    return bw == 32 ? (uint)x : (uint)x & ((1u << bw) - 1u);
}
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    uint lid = get_local_id(0);
    uint b = param & 63u, hb = (param >> 6) & 63u, e = (param >> 12) & 0x3FFu;
    for (uint j = lid; j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, j, b);
    /* No early return when e = 0, although it would be uniform: PoCL 3.1 (CPU, LLVM 15)
     * miscompiled such a return ahead of this barrier (patches landed in the wrong values). */
    barrier(CLK_LOCAL_MEM_FENCE);
    uint pw = n > 1 ? 32 - clz(n - 1) : 0;
    uint pbase = n * b, hbase = pbase + e * pw;
    for (uint i = lid; i < e; i += BLOCK_SIZE)
        vals[bits_at(w, pbase + i * pw, pw)] |= bits_at(w, hbase + i * hb, hb) << b; /* e > 0: b < 32 */
}

#elif CODEC == CODEC_RICE
/* rice (src/codec_rice.c): param = k | U << 8; binary part bp(n, k) words, then the unary
 * part, ceil(U / 32) words, where value r ends at the r-th one bit; U = 0 means no unary part
 * and every q is 0. Each work-item takes a
 * contiguous run of unary words and counts their ones; a work-group scan gives the rank of
 * its first one; it then writes each one's bit position into pos[rank] (the compaction).
 * q_r = pos_r - pos_{r-1} - 1, value r = q_r << k | low_r. */
#define DECODE_SCRATCH (2 * BLOCK_SIZE) /* scan buffer | pos */
inline void decode_stream(__global const uint *w, uint n, uint param, __local uint *vals, __local uint *scratch)
{
    uint lid = get_local_id(0);
    uint k = param & 0xFFu, U = param >> 8;
    uint nb = (n * k + 31) >> 5, nw = (U + 31) >> 5;
    __global const uint *u = w + nb;
    __local uint *pos = scratch + BLOCK_SIZE;
    uint per = (nw + BLOCK_SIZE - 1) / BLOCK_SIZE;
    uint a = min(lid * per, nw), z = min(a + per, nw);
    uint c = 0;
    for (uint i = a; i < z; i++) c += popcount(u[i]);
    uint tot;
    uint r = wg_scan_incl(scratch, c, &tot) - c; /* rank of this work-item's first one */
    for (uint i = a; i < z; i++) {
        uint x = u[i];
        while (x) {
            pos[r++] = i << 5 | (31 - clz(x & (0u - x))); /* lowest set bit */
            x &= x - 1;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint j = lid; j < n; j += BLOCK_SIZE) {
        uint q = U ? pos[j] - (j ? pos[j - 1] + 1 : 0) : 0, low = bits_get(w, j, k); /* U = 0: all q 0 */
        vals[j] = k < 32 ? q << k | low : low; /* k = 32: q is 0, and a 32-bit shift undefined */
    }
}

#else
#error "unknown CODEC"
#endif

__kernel __attribute__((reqd_work_group_size(BLOCK_SIZE, 1, 1)))
void decode_blocks(__global const uint *words, __global const idx_block *blocks,
                   __global const uint *tasks, uint task_base,
                   __global uint *docs, __global uint *freqs)
{
    __local uint vals[BLOCK_SIZE];
    __local uint scan[BLOCK_SIZE];
    __local uint scratch[DECODE_SCRATCH];
    uint g = get_group_id(0), i = get_local_id(0);
    abi_task tk = ((__global const abi_task *)(tasks + task_base))[g];
    __global const idx_block *m = blocks + tk.block;
    uint dst = tk.dst, first = m->first, offset = m->offset, info = m->info, dparam = m->dparam, fparam = m->fparam;
    uint n = IDX_INFO_COUNT(info), fofs = IDX_INFO_FOFS(info);

    decode_stream(words + offset, n - 1, dparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = (i > 0 && i < n) ? vals[i - 1] + 1 : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint total;
    uint s = wg_scan_incl(scan, x, &total);
    decode_stream(words + offset + fofs, n, fparam, vals, scratch);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        docs[dst + i] = first + s;
        freqs[dst + i] = vals[i] + 1;
    }
}
