/* Bit-packing, the reference (plain C) side. cl/common.cl's bits_get() is its device twin. */
#include "codec_bp.h"

#include <string.h>

unsigned bp_width(const uint32_t *v, uint32_t n)
{
    uint32_t all = 0;
    for (uint32_t i = 0; i < n; i++) all |= v[i];
    unsigned bw = 0;
    while (bw < 32 && (all >> bw) != 0) bw++;
    return bw;
}

void bp_pack(const uint32_t *v, uint32_t n, unsigned bw, uint32_t *out)
{
    memset(out, 0, (size_t)bp_words(n, bw) * sizeof *out);
    if (bw == 0) return;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t bit = (uint64_t)i * bw;
        uint32_t w = (uint32_t)(bit >> 5), sh = (uint32_t)(bit & 31);
        uint64_t x = (uint64_t)v[i] << sh; /* may span two words */
        out[w] |= (uint32_t)x;
        if (sh + bw > 32) out[w + 1] |= (uint32_t)(x >> 32);
    }
}

uint32_t bp_get(const uint32_t *w, uint32_t i, unsigned bw)
{
    if (bw == 0) return 0;
    uint64_t bit = (uint64_t)i * bw;
    uint32_t wi = (uint32_t)(bit >> 5), sh = (uint32_t)(bit & 31);
    uint64_t x = w[wi];
    if (sh + bw > 32) x |= (uint64_t)w[wi + 1] << 32;
    x >>= sh;
    return bw == 32 ? (uint32_t)x : (uint32_t)x & ((1u << bw) - 1);
}
