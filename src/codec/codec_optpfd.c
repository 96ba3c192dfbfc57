/* optpfd: per-block PForDelta with the bit width that minimizes the block (NewPFD / OptPFD,
 * Yan, Ding and Suel 2009), in a layout a GPU work-group decodes with one unpack pass and
 * one patch pass.
 *
 * The encoder tries every slot width b = 0..32. A value v < 2^b fits its slot; an exception
 * (v >= 2^b) keeps its low b bits in its slot and goes to the exception list: its position
 * and its high part v >> b (>= 1). Positions take pw = width(n - 1) bits (enough for any
 * position, so no width is stored for them), high parts the width hb of the largest high
 * part. The block costs n*b + e*(pw + hb) bits, e the exception count; the encoder keeps the
 * b of the fewest words (ties: the larger b, fewer exceptions to patch). b = the largest
 * value's width is among the candidates and costs exactly what bp does, so optpfd is never
 * larger than bp.
 *
 * Parameter word: b | hb << 6 | e << 12 (bits 0-5: b 0..32, 6-11: hb 0..32, 12-21: e 0..n,
 * 22-31: zero).
 *
 * Stream: ONE bit stream, LSB-first in 32-bit words (bit i is bit i%32 of word i/32), with
 *   bits [0, n*b)                    the n slots, slot j at bit j*b;
 *   bits [n*b, n*b + e*pw)           the e positions, increasing, position i at n*b + i*pw;
 *   bits [n*b + e*pw, n*b + e*(pw+hb)) the e high parts, high i at n*b + e*pw + i*hb;
 * then zero bits up to the next word boundary. Packing the three arrays back to back rather
 * than word-aligning each saves up to two words per stream, which matters on the short
 * streams (127 gaps) of real blocks.
 *
 * Decoding: value j = slot j, then for each exception i: value[pos_i] |= high_i << b.
 *
 * The reference decoder accepts only what an encoder could have written and the device can
 * decode without checks: b, hb <= 32, e <= n, reserved bits zero; no exceptions (and hb 0)
 * when e = 0; when e > 0, hb >= 1 and b + hb <= 32 (so high << b never loses bits and b < 32);
 * positions strictly increasing and < n; every high part >= 1 (otherwise the value was no
 * exception); zero padding; and exactly `avail` words. */
#include "codec/codec.h"
#include "codec/codec_bp.h"

#include <string.h>

#define OPD_FIELD 63u
#define OPD_E_MAX 1023u

/* Bits needed for x (0 for 0). */
static unsigned width_of(uint32_t x)
{
    unsigned w = 0;
    while (w < 32 && (x >> w) != 0) w++;
    return w;
}

static uint32_t optpfd_encode(const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth, uint32_t *param,
                              uint32_t *out)
{
    /* cnt[w]: values of width exactly w; the exceptions at slot width b are those wider than b. */
    uint32_t cnt[33] = {0};
    unsigned maxw = 0;
    for (uint32_t i = 0; i < n; i++) {
        unsigned w = width_of(v[i]);
        cnt[w]++;
        if (w > maxw) maxw = w;
    }
    unsigned pw = n > 1 ? width_of(n - 1) : 0;
    unsigned best_b = 32;
    uint64_t best_words = UINT64_MAX;
    uint32_t e = 0; /* values wider than b, accumulated as b falls */
    for (unsigned b = 33; b-- > 0;) {
        if (b < 32) e += cnt[b + 1];
        unsigned hb = e ? maxw - b : 0;
        uint64_t bits = (uint64_t)n * b + (uint64_t)e * (pw + hb);
        uint64_t words = (bits + 31) / 32;
        if (words < best_words) best_words = words, best_b = b;
    }
    unsigned b = best_b;
    uint32_t ne = 0;
    for (uint32_t i = 0; i < n; i++) ne += width_of(v[i]) > b;
    unsigned hb = ne ? maxw - b : 0;
    memset(out, 0, (size_t)best_words * 4);
    uint64_t pbase = (uint64_t)n * b, hbase = pbase + (uint64_t)ne * pw;
    uint32_t mask = b == 32 ? UINT32_MAX : (1u << b) - 1, k = 0;
    for (uint32_t j = 0; j < n; j++) {
        bp_put_bits(out, (uint64_t)j * b, v[j] & mask, b);
        if (b < 32 && (v[j] >> b) != 0) {
            bp_put_bits(out, pbase + (uint64_t)k * pw, j, pw);
            bp_put_bits(out, hbase + (uint64_t)k * hb, v[j] >> b, hb);
            k++;
        }
    }
    *param = (uint32_t)b | (uint32_t)hb << 6 | ne << 12;
    return (uint32_t)best_words;
}

static int optpfd_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                         uint32_t *used)
{
    unsigned b = param & OPD_FIELD, hb = (param >> 6) & OPD_FIELD;
    uint32_t e = (param >> 12) & OPD_E_MAX;
    if ((param >> 22) != 0 || b > 32 || hb > 32 || e > n) return -1;
    if (e == 0 ? hb != 0 : (hb == 0 || b + hb > 32)) return -1;
    unsigned pw = n > 1 ? width_of(n - 1) : 0;
    uint64_t pbase = (uint64_t)n * b, hbase = pbase + (uint64_t)e * pw, bits = hbase + (uint64_t)e * hb;
    if ((uint64_t)avail != (bits + 31) / 32) return -1;
    if ((bits & 31) && (w[avail - 1] >> (bits & 31)) != 0) return -1; /* padding must be zero */
    for (uint32_t j = 0; j < n; j++) out[j] = bp_get_bits(w, (uint64_t)j * b, b);
    uint32_t prev = 0;
    for (uint32_t i = 0; i < e; i++) {
        uint32_t p = bp_get_bits(w, pbase + (uint64_t)i * pw, pw);
        uint32_t h = bp_get_bits(w, hbase + (uint64_t)i * hb, hb);
        if (p >= n || (i > 0 && p <= prev) || h == 0) return -1;
        out[p] |= h << b; /* b + hb <= 32: nothing shifted out, and b < 32 */
        prev = p;
    }
    *used = avail;
    return 0;
}

const cdc_codec cdc_codec_optpfd = {
    .name = "optpfd",
    .help = "PForDelta with each block's size-minimizing width (OptPFD)",
    .encode = optpfd_encode,
    .decode = optpfd_decode,
    .list_param = NULL,
    .uses_depth = 0,
    .kernel = "codec_optpfd.cl",
};
