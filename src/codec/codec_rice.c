/* rice: Golomb-Rice coding with the unary and binary parts in two separate bit arrays, so
 * that a GPU work-group decodes a block with two prefix sums and a compaction instead of a
 * serial bit walk.
 *
 * With parameter k (0..32) a value v splits into its low k bits (binary part) and the
 * quotient q = v >> k (unary part: q zero bits, then a one bit). The encoder picks the k of
 * the fewest words; on geometric data (docID gaps) that is about log2 of the mean, and the
 * unary part costs about two bits per value. k = the largest value's width gives q = 0
 * everywhere, so the unary part is n bits and the block never costs more than 33n bits plus
 * two words of padding.
 *
 * Parameter word: k | U << 8 (bits 0-7: k 0..32; bits 8-31: U, the length of the unary part
 * in bits = n + sum of q; the encoder's U is at most 33*512 + 64). U = 0 with n > 0 is the
 * escape: no unary part, every q is 0 (plain bit-packing), chosen whenever it is no larger,
 * so rice is never larger than bp (an all-zero frequency stream costs no words, not n bits).
 *
 * Stream, all arrays LSB-first in 32-bit words (bit i is bit i%32 of word i/32):
 *   words [0, B), B = ceil(n*k / 32):   the binary part, value j's low k bits at bit j*k
 *                                       (bp's layout), zero-padded to the word;
 *   words [B, B + ceil(U / 32)):        the unary part: for j = 0..n-1 in turn, q_j zeros then
 *                                       a one; U bits in all, zero-padded to the word.
 * So the r-th one bit (r counted from 0) of the unary part ends value r, at bit position
 * pos_r, and q_r = pos_r - pos_{r-1} - 1 (pos_{-1} = -1). Value r = q_r << k | low_r.
 *
 * The device (cl/codec_rice.cl) counts the ones per word, turns the counts into ranks with a
 * work-group prefix sum, then each work-item writes the bit position of each one in its words
 * into pos[rank] (the compaction); q follows from neighbouring positions.
 *
 * The reference decoder accepts only what an encoder could have written and the device can
 * decode without checks: k <= 32, exactly B + ceil(U/32) words, zero padding in both parts,
 * exactly n ones among the U unary bits with the last of them at bit U-1 (so nothing trails
 * the n-th value), and every q << k fitting 32 bits (q = 0 when k = 32). */
#include "codec/codec.h"
#include "codec/codec_bp.h"

#include <string.h>


static uint32_t rice_encode(const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth, uint32_t *param,
                            uint32_t *out)
{
    unsigned best_k = 32;
    uint64_t best_words = UINT64_MAX, best_u = n;
    for (unsigned k = 0; k <= 32; k++) {
        uint64_t u = n;
        if (k < 32)
            for (uint32_t j = 0; j < n; j++) u += v[j] >> k;
        uint64_t words = bp_words(n, k) + (u + 31) / 32;
        if (words < best_words) best_words = words, best_k = k, best_u = u;
    }
    /* The escape: U = 0 stores no unary part, every q being 0, i.e. plain bit-packing at the
     * largest value's width; taken when it is no larger (always for all-zero streams). */
    unsigned wmax = bp_width(v, n);
    if (n > 0 && bp_words(n, wmax) <= best_words) best_k = wmax, best_u = 0;
    unsigned k = best_k;
    uint32_t U = (uint32_t)best_u, nb = bp_words(n, k);
    bp_pack_low(v, n, k, out);
    uint32_t *u = out + nb, nu = (U + 31) / 32;
    memset(u, 0, (size_t)nu * 4);
    uint64_t bit = 0;
    for (uint32_t j = 0; j < n && U > 0; j++) {
        bit += k < 32 ? v[j] >> k : 0; /* the zeros are already there */
        u[bit >> 5] |= 1u << (bit & 31);
        bit++;
    }
    *param = (uint32_t)k | U << 8;
    return nb + nu;
}

static int rice_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                       uint32_t *used)
{
    unsigned k = param & 0xFFu;
    uint32_t U = param >> 8;
    if (k > 32) return -1;
    uint32_t nb = bp_words(n, k), nu = (U + 31) / 32;
    if ((uint64_t)avail != (uint64_t)nb + nu) return -1;
    uint64_t bbits = (uint64_t)n * k;
    if ((bbits & 31) && (w[nb - 1] >> (bbits & 31)) != 0) return -1; /* binary padding */
    const uint32_t *u = w + nb;
    if (U == 0) { /* the escape: every q is 0 */
        for (uint32_t r = 0; r < n; r++) out[r] = bp_get(w, r, k);
        *used = avail;
        return 0;
    }
    if ((U & 31) && (u[nu - 1] >> (U & 31)) != 0) return -1; /* unary padding */
    /* Walk the ones of the first U bits: value r ends at the r-th one. */
    uint32_t r = 0, start = 0; /* start: first bit of value r's unary code */
    for (uint32_t i = 0; i < nu; i++) {
        uint32_t x = u[i];
        while (x) {
            uint32_t p = i * 32 + (uint32_t)__builtin_ctz(x);
            x &= x - 1;
            if (r == n) return -1; /* more ones than values */
            uint32_t q = p - start;
            if (k == 32 ? q != 0 : (k > 0 && (q >> (32 - k)) != 0)) return -1; /* q << k overflows */
            out[r] = k == 32 ? bp_get(w, r, k) : q << k | bp_get(w, r, k);
            r++;
            start = p + 1;
        }
    }
    /* n ones, the last one the last unary bit (start = U), or nothing at all for n = 0 */
    if (r != n || start != U) return -1;
    *used = avail;
    return 0;
}

const cdc_codec cdc_codec_rice = {
    .name = "rice",
    .help = "Rice codes, unary and binary parts in separate bit arrays",
    .encode = rice_encode,
    .decode = rice_decode,
    .list_param = NULL,
    .uses_depth = 0,
    .kernel = "codec_rice.cl",
};
