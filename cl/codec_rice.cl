/* codec_rice.cl: rice's device decoder, the twin of src/codec/codec_rice.c; the decode
 * program compiles it ahead of decode.cl, whose header gives the contract (DECODE_SCRATCH,
 * decode_stream). */

/* rice (src/codec/codec_rice.c): param = k | U << 8; binary part bp(n, k) words, then the
 * unary part, ceil(U / 32) words, where value r ends at the r-th one bit; U = 0 means no unary
 * part and every q is 0. Each work-item takes a contiguous run of unary words and counts their
 * ones; a work-group scan gives the rank of its first one; it then writes each one's bit
 * position into pos[rank] (the compaction).
 * q_r = pos_r - pos_{r-1} - 1, value r = q_r << k | low_r.
 * A valid unary part has exactly n ones; a forged one may hold more (up to 2^24 bits), so a
 * rank is held to BLOCK_SIZE - 1 (the extra ones land on pos's last slot), and unary words are
 * read through the same clamp as every other word (w[last] at most). With DECODE_CHECK, every
 * rule of the strict decoder is tested too (decode.cl: decode_block_at). */
#define DECODE_SCRATCH (2 * BLOCK_SIZE) /* scan buffer | pos */
inline void decode_stream(__global const uint *w, uint last, uint n, uint param, __local uint *vals,
                          __local uint *scratch, uint avail, uint *bad)
{
    uint lid = get_local_id(0);
    uint k = param & 0xFFu, U = param >> 8;
    uint nb = (n * k + 31) >> 5, nw = (U + 31) >> 5; /* the unary part: words nb .. nb + nw - 1 */
    __local uint *pos = scratch + BLOCK_SIZE;
    uint per = (nw + BLOCK_SIZE - 1) / BLOCK_SIZE;
    uint a = min(lid * per, nw), z = min(a + per, nw);
    uint c = 0;
    for (uint i = a; i < z; i++) c += popcount(w[min(nb + i, last)]);
    uint tot;
    uint r = wg_scan_incl(scratch, c, &tot) - c; /* rank of this work-item's first one */
    for (uint i = a; i < z; i++) {
        uint x = w[min(nb + i, last)];
        while (x) {
            pos[min(r++, (uint)BLOCK_SIZE - 1)] = i << 5 | (31 - clz(x & (0u - x))); /* lowest set bit */
            x &= x - 1;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint wrong = 0;
    for (uint j = lid; j < n; j += BLOCK_SIZE) {
        uint q = U ? pos[j] - (j ? pos[j - 1] + 1 : 0) : 0, low = bits_get(w, last, j, k); /* U = 0: all q 0 */
        vals[j] = k < 32 ? q << k | low : low; /* k = 32: q is 0, and a 32-bit shift undefined */
        if (DECODE_CHECK) wrong |= k == 32 ? q != 0 : (k > 0 && (q >> (32 - k)) != 0); /* q << k would overflow */
    }
    if (DECODE_CHECK) { /* the shape, as codec_rice.c's strict decoder requires it */
        ulong bbits = (ulong)n * k;
        wrong |= k > 32 || (ulong)avail != (bbits + 31) / 32 + nw;
        if (!wrong && (bbits & 31)) wrong |= (w[min(nb - 1, last)] >> (uint)(bbits & 31)) != 0; /* binary padding */
        if (!wrong && U) {
            if (U & 31) wrong |= (w[min(nb + nw - 1, last)] >> (U & 31)) != 0; /* unary padding */
            /* exactly n ones (ranks below n <= BLOCK_SIZE, so pos is exact), the last one U's last bit */
            wrong |= tot != n || n == 0 || pos[n - 1] != U - 1;
        }
        *bad |= wrong;
    }
}
