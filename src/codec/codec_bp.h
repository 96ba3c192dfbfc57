/* Bit-packing codec: n values of bw bits each, packed LSB-first into 32-bit words (value i
 * occupies bits [i*bw, i*bw+bw) of the word stream). bw ranges 0..32; bw 0 stores nothing. */
#ifndef CLS_CODEC_BP_H
#define CLS_CODEC_BP_H

#include <stddef.h>
#include <stdint.h>

/* Words needed for n values of bw bits. */
static inline uint32_t bp_words(uint32_t n, unsigned bw) { return (uint32_t)(((uint64_t)n * bw + 31) / 32); }
/* Smallest bit width that holds every value of v[0..n). */
unsigned bp_width(const uint32_t *v, uint32_t n);
/* Packs v[0..n) at bw bits into out[0..bp_words(n,bw)), which the call zero-fills first. */
void bp_pack(const uint32_t *v, uint32_t n, unsigned bw, uint32_t *out);
/* Packs the low bw bits of each of v[0..n) (values may be wider: the rest is dropped), as
 * bp_pack lays them out; the exception codecs keep their slots' low bits this way. */
void bp_pack_low(const uint32_t *v, uint32_t n, unsigned bw, uint32_t *out);
/* ORs the bw low bits of v (v must fit them) in at bit offset `bit` of out; bw 0..32. */
void bp_put_bits(uint32_t *out, uint64_t bit, uint32_t v, unsigned bw);
/* The bw bits at bit offset `bit` of w (they may straddle two words); bw 0..32. */
uint32_t bp_get_bits(const uint32_t *w, uint64_t bit, unsigned bw);
/* Value i of a packed stream. */
uint32_t bp_get(const uint32_t *w, uint32_t i, unsigned bw);

#endif
