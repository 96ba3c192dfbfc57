/* Bit-packing, the reference (plain C) side. cl/common.cl's bits_at() and bits_get() are the
 * device twins of bp_get_bits() and bp_get(). */
#include "codec/codec_bp.h"
#include "codec/codec.h"

#include <string.h>

unsigned bp_width(const uint32_t *v, uint32_t n)
{
    uint32_t all = 0;
    for (uint32_t i = 0; i < n; i++) all |= v[i];
    unsigned bw = 0;
    while (bw < 32 && (all >> bw) != 0) bw++;
    return bw;
}

void bp_put_bits(uint32_t *out, uint64_t bit, uint32_t v, unsigned bw)
{
    if (bw == 0) return;
    uint32_t wi = (uint32_t)(bit >> 5), sh = (uint32_t)(bit & 31);
    uint64_t x = (uint64_t)v << sh; /* may span two words */
    out[wi] |= (uint32_t)x;
    if (sh + bw > 32) out[wi + 1] |= (uint32_t)(x >> 32);
}

uint32_t bp_get_bits(const uint32_t *w, uint64_t bit, unsigned bw)
{
    if (bw == 0) return 0;
    uint32_t wi = (uint32_t)(bit >> 5), sh = (uint32_t)(bit & 31);
    uint64_t x = w[wi];
    if (sh + bw > 32) x |= (uint64_t)w[wi + 1] << 32;
    x >>= sh;
    return bw == 32 ? (uint32_t)x : (uint32_t)x & ((1u << bw) - 1);
}

void bp_pack(const uint32_t *v, uint32_t n, unsigned bw, uint32_t *out)
{
    memset(out, 0, (size_t)bp_words(n, bw) * sizeof *out);
    for (uint32_t i = 0; bw && i < n; i++) bp_put_bits(out, (uint64_t)i * bw, v[i], bw);
}

void bp_pack_low(const uint32_t *v, uint32_t n, unsigned bw, uint32_t *out)
{
    memset(out, 0, (size_t)bp_words(n, bw) * sizeof *out);
    uint32_t mask = bw == 32 ? UINT32_MAX : (1u << bw) - 1;
    for (uint32_t i = 0; bw && i < n; i++) bp_put_bits(out, (uint64_t)i * bw, v[i] & mask, bw);
}

uint32_t bp_get(const uint32_t *w, uint32_t i, unsigned bw) { return bp_get_bits(w, (uint64_t)i * bw, bw); }

/* bp as a stream codec: parameter = the bit width (0..32), then n values packed. */
static uint32_t bp_encode(const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth, uint32_t *param,
                          uint32_t *out)
{
    unsigned bw = bp_width(v, n);
    bp_pack(v, n, bw, out);
    *param = bw;
    return bp_words(n, bw);
}

static int bp_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                     uint32_t *used)
{
    if (param > 32 || avail != bp_words(n, param)) return -1;
    *used = avail;
    if (param == 0) {
        memset(out, 0, (size_t)n * sizeof *out);
        return 0;
    }
    /* Sequential unpacking through a 64-bit window: a word is loaded only when the next value
     * needs its bits, so nothing past the stream's last word is read. */
    const uint64_t mask = param == 32 ? 0xFFFFFFFFull : (1ull << param) - 1;
    uint64_t buf = 0;
    unsigned have = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (have < param) {
            buf |= (uint64_t)*w++ << have;
            have += 32;
        }
        out[i] = (uint32_t)(buf & mask);
        buf >>= param;
        have -= param;
    }
    /* the last word's bits past the last value are padding, written as zeros */
    return buf != 0 ? -1 : 0;
}

const cdc_codec cdc_codec_bp = {
    .name = "bp",
    .help = "bit-packing, one bit width per block and stream",
    .encode = bp_encode,
    .decode = bp_decode,
    .list_param = NULL,
    .uses_depth = 0,
    .kernel = "codec_bp.cl",
};
