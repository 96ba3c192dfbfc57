/* codec_optpfd.cl: optpfd's device decoder, the twin of src/codec/codec_optpfd.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

/* optpfd (src/codec/codec_optpfd.c): param = b | hb << 6 | e << 12; one bit stream of n
 * slots of b bits, e positions of pw = width(n-1) bits, e high parts of hb bits. Each
 * work-item unpacks its slots; after a barrier, work-item i < e ORs high_i << b into slot
 * pos_i (positions are distinct, so no two work-items write the same slot). Positions and
 * high parts sit at arbitrary bit offsets: bits_at (common.cl) reads them. A forged e is
 * held to n and a forged position to n - 1 (a valid stream has e <= n and positions < n). With
 * DECODE_CHECK, every rule of the strict decoder is tested too (decode.cl: decode_block_at). */
#define DECODE_SCRATCH 1
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    uint lid = get_local_id(0);
    uint b = param & 63u, hb = (param >> 6) & 63u, e0 = (param >> 12) & 0x3FFu, e = min(e0, n);
    for (uint j = lid; j < n; j += BLOCK_SIZE) vals[j] = bits_get(w, last, j, b);
    /* No early return when e = 0, although it would be uniform: PoCL 3.1 (CPU, LLVM 15)
     * miscompiled such a return ahead of this barrier (patches landed in the wrong values). */
    barrier(CLK_LOCAL_MEM_FENCE);
    uint pw = n > 1 ? 32 - clz(n - 1) : 0;
    uint pbase = n * b, hbase = pbase + e * pw;
    uint wrong = 0;
    for (uint i = lid; i < e; i += BLOCK_SIZE) { /* e > 0: n >= 1, and b < 32 */
        uint p = bits_at(w, last, pbase + i * pw, pw), h = bits_at(w, last, hbase + i * hb, hb);
        vals[min(p, n - 1)] |= h << b;
        /* positions increasing and below n, high parts not 0 */
        if (DECODE_CHECK) wrong |= p >= n || h == 0 || (i > 0 && p <= bits_at(w, last, pbase + (i - 1) * pw, pw));
    }
    if (DECODE_CHECK) { /* the shape, as codec_optpfd.c's strict decoder requires it */
        ulong bits = (ulong)n * b + (ulong)e0 * pw + (ulong)e0 * hb;
        wrong |= (param >> 22) != 0 || b > 32 || hb > 32 || e0 > n || (e0 == 0 ? hb != 0 : (hb == 0 || b + hb > 32));
        wrong |= (ulong)avail != (bits + 31) / 32;
        if (!wrong && (bits & 31)) wrong |= (w[min(avail - 1, last)] >> (uint)(bits & 31)) != 0; /* zero padding */
        *bad |= wrong;
    }
}
