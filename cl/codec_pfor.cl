/* codec_pfor.cl: pfor's device decoder, the twin of src/codec/codec_pfor.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

#ifndef PFOR_DEPTH
#define PFOR_DEPTH 1     /* pfor: levels of recursive exception coding (index header) */
#endif

/* pfor (src/codec/codec_pfor.c): a tree of nodes; the top node's b | e << 8 is param, every
 * child node starts with a header word b | e << 8. Node k: low part (bit-packed, width b), then
 * if e > 0 its P child (exception positions as gaps) and H child (high parts - 1), in
 * pre-order.
 *
 * Decoding: work-item 0 walks the headers (at most 2^(PFOR_DEPTH+1) - 1 nodes) into a local
 * table; every node's low part is unpacked in parallel (the top's into vals, the children's
 * into `kids`, at most 3 * BLOCK_SIZE values in all); then, children before parents (reverse
 * pre-order), each node with exceptions turns its P child's gaps into positions with a
 * work-group scan (e <= m <= n <= BLOCK_SIZE: one element per work-item) and ORs (H + 1) << b
 * into the exception slots.
 *
 * A valid stream keeps all of that (the host's strict decoder checks it: e <= m, no
 * exceptions at depth 0, children within 3n values, positions below m); a forged one is held
 * to it by the walk (e to m, e to 0 at depth 0, a child that would overflow `kids` empties its
 * parent's exceptions) and the patch (a position to m - 1), and every word is read through the
 * clamp to w[last]. With DECODE_CHECK, the walk and the patch also test every rule of the strict
 * decoder (decode.cl: decode_block_at). */
#if PFOR_DEPTH == 0
/* No exceptions at depth 0: the top node is plain bit-packing at width b. */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    uint b = param & 0xFFu;
    for (uint j = get_local_id(0); j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, last, j, b);
    if (DECODE_CHECK) { /* codec_pfor.c at depth 0: no exceptions, the reserved bits zero, zero padding */
        uint nw = (n * b + 31) >> 5, wrong = (param >> 8) != 0 || b > 32 || avail != nw;
        if (!wrong && ((n * b) & 31)) wrong |= (w[min(nw - 1, last)] >> ((n * b) & 31)) != 0;
        *bad |= wrong;
    }
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
#define PF_KIDS (3 * BLOCK_SIZE)
/* scratch: scan buffer (BLOCK_SIZE) | node table | child values (PF_KIDS) */
#define DECODE_SCRATCH (BLOCK_SIZE + PF_TAB_SIZE + PF_KIDS)
/* What codec_pfor.c's node_decode refuses in the node of m values whose header word is hdr and
 * whose low part starts at word at of the stream (avail words) at depth d: reserved bits, a width
 * over 32, more exceptions than values, exceptions at depth 0 or width 32, a low part past the
 * stream's end, nonzero padding. */
inline uint pfor_node_bad(__global const uint *w, uint last, uint avail, uint at, uint hdr, uint m, uint b, uint e,
                          uint d)
{
    if ((hdr >> 18) != 0 || b > 32 || e > m || (e > 0 && (d == 0 || b == 32))) return 1;
    uint nw = (m * b + 31) >> 5, tail = (m * b) & 31;
    if (at > avail || nw > avail - at) return 1;
    return tail && (w[min(at + nw - 1, last)] >> tail) != 0;
}
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    uint lid = get_local_id(0), wrong = 0;
    __local uint *tab = scratch + BLOCK_SIZE;
    __local uint *kids = tab + PF_TAB_SIZE;
    if (lid == 0) {
        /* pre-order walk; the stack holds the pending children as parent << 1 | (1: H). Only a
         * node above depth 0 with exceptions pushes its two, so the tree never exceeds
         * PFOR_NODES nodes nor the stack PFOR_DEPTH + 1 entries. */
        uint stk[PFOR_DEPTH + 2], dep[PFOR_NODES];
        uint sp = 0, cnt = 1, base = 0;
        uint b = param & 0xFFu, e0 = (param >> 8) & 0x3FFu, e = min(e0, n);
        PF_TAB(PF_WOFF, 0) = 0; PF_TAB(PF_M, 0) = n; PF_TAB(PF_B, 0) = b; PF_TAB(PF_E, 0) = e;
        PF_TAB(PF_BASE, 0) = 0; PF_TAB(PF_PC, 0) = 0; PF_TAB(PF_HC, 0) = 0;
        dep[0] = PFOR_DEPTH;
        uint at = (n * b + 31) >> 5;
        if (DECODE_CHECK) wrong = pfor_node_bad(w, last, avail, 0, param, n, b, e0, PFOR_DEPTH);
        if (e) { stk[sp++] = 1; stk[sp++] = 0; }
        while (sp > 0 && cnt < PFOR_NODES) {
            uint it = stk[--sp], par = it >> 1, k = cnt++;
            uint hdr = w[min(at, last)], m = PF_TAB(PF_E, par);
            /* codec_pfor.c's child_decode: the header inside the stream, the 3n budget */
            if (DECODE_CHECK) wrong |= at >= avail || base + m > 3 * n;
            at++;
            if (base + m > PF_KIDS) { /* forged: the children would overflow kids */
                PF_TAB(PF_E, par) = 0;
                m = 0;
            }
            dep[k] = dep[par] - 1;
            b = hdr & 0xFFu;
            e0 = (hdr >> 8) & 0x3FFu;
            e = dep[k] > 0 ? min(e0, m) : 0;
            if (DECODE_CHECK && !wrong) wrong = pfor_node_bad(w, last, avail, at, hdr, m, b, e0, dep[k]);
            PF_TAB(PF_WOFF, k) = at; PF_TAB(PF_M, k) = m; PF_TAB(PF_B, k) = b; PF_TAB(PF_E, k) = e;
            PF_TAB(PF_BASE, k) = base; PF_TAB(PF_PC, k) = 0; PF_TAB(PF_HC, k) = 0;
            PF_TAB((it & 1) ? PF_HC : PF_PC, par) = k;
            base += m;
            at += (m * b + 31) >> 5;
            if (e) { stk[sp++] = k << 1 | 1; stk[sp++] = k << 1; }
        }
        PF_TAB(PF_FIELDS, 0) = cnt; /* the slot after the table */
        if (DECODE_CHECK) wrong |= at != avail; /* the stream ends at its last word */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint cnt = PF_TAB(PF_FIELDS, 0);
    for (uint k = 0; k < cnt; k++) {
        uint m = PF_TAB(PF_M, k), b = PF_TAB(PF_B, k), bit0 = PF_TAB(PF_WOFF, k) << 5;
        __local uint *dst = k ? kids + PF_TAB(PF_BASE, k) : vals;
        for (uint j = lid; j < m; j += BLOCK_SIZE) dst[j] = bits_at(w, last, bit0 + j * b, b);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = cnt; k-- > 0;) {
        uint e = PF_TAB(PF_E, k);
        if (e == 0) continue; /* uniform: every work-item reads the same table */
        uint b = PF_TAB(PF_B, k), m = PF_TAB(PF_M, k);
        __local uint *dst = k ? kids + PF_TAB(PF_BASE, k) : vals;
        __local const uint *gp = kids + PF_TAB(PF_BASE, PF_TAB(PF_PC, k));
        __local const uint *hp = kids + PF_TAB(PF_BASE, PF_TAB(PF_HC, k));
        uint g = lid < e ? gp[lid] : 0, tot;
        uint p = wg_scan_incl(scratch, g, &tot) + lid;       /* p_i = g_0 + ... + g_i + i */
        if (lid < e) dst[min(p, m - 1)] |= (hp[lid] + 1) << b; /* e > 0: m >= e, and b < 32 */
        /* positions below m (each gap below m, so the sum cannot wrap), and (H + 1) << b within
         * 32 bits; b < 32 on a node the walk passed */
        if (DECODE_CHECK && lid < e) wrong |= g >= m || p >= m || (b < 32 && (((ulong)hp[lid] + 1) >> (32 - b)) != 0);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (DECODE_CHECK) *bad |= wrong;
}
#endif
