/* Posting-list codecs, the reference (plain C) side: how one stream of a block (its n-1 docID
 * gaps, or its n frequencies minus one) becomes 32-bit words and back. cl/decode.cl holds the
 * device twin of every decoder; docs/FORMAT.md specifies each layout.
 *
 * A stream is coded on its own: its words start at a word boundary and the decoder needs
 * only the words, the value count n (0..IDX_MAX_BLOCK) and the parameter word the encoder
 * chose (stored in the block's metadata as dparam / fparam). Some codecs also use a
 * list-wide parameter (pfor's bit width, chosen over all of a list's values) and the index's
 * pfor depth; the encoder folds whatever the decoder needs into the parameter word or the
 * stream itself, so decoding never needs the rest of the list.
 *
 * Decoders are strict: cdc_decode reads nothing past the words it is given and reports a
 * stream that is malformed or does not end exactly at its last word. cls_index_open runs it
 * over every stream, so the device decoders, which do not check, only ever see verified
 * streams.
 */
#ifndef CLS_CODEC_H
#define CLS_CODEC_H

#include <stdint.h>

#include "clsearch.h"

#define CDC_MAX_N 512u /* = IDX_MAX_BLOCK */

/* Upper bound of the words cdc_encode writes for n values (any codec, any depth <= 3). */
static inline uint32_t cdc_max_words(uint32_t n) { return 4 * n + 64; }

/* The list-wide parameter of codec c for a whole list's stream values v[0..n) (pfor: the bit
 * width that about 90% of the values fit). 0 for the codecs that have none. */
uint32_t cdc_list_param(cls_codec c, const uint32_t *v, uint64_t n);

/* Encodes v[0..n) into out (room for cdc_max_words(n)); *param receives the word the decoder
 * needs. Returns the number of words written. depth: pfor's exception recursion depth. */
uint32_t cdc_encode(cls_codec c, const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth,
                    uint32_t *param, uint32_t *out);

/* Decodes n values from w[0..avail) into out. Returns 0 and the words used in *used, or -1
 * if the stream is malformed (then out is undefined). A stream is well-formed only if it
 * uses exactly avail words: callers pass the stream's stored extent. */
int cdc_decode(cls_codec c, const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth,
               uint32_t *out, uint32_t *used);

/* Per-codec entry points (codec_<name>.c), dispatched by the two functions above. */
uint32_t cdc_raw_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out);
int cdc_raw_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used);
uint32_t cdc_bp_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out);
int cdc_bp_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used);
uint32_t cdc_pfor_list_param(const uint32_t *v, uint64_t n);
uint32_t cdc_pfor_encode(const uint32_t *v, uint32_t n, uint32_t list_width, unsigned depth, uint32_t *param,
                         uint32_t *out);
int cdc_pfor_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth, uint32_t *out,
                    uint32_t *used);
uint32_t cdc_optpfd_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out);
int cdc_optpfd_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out,
                      uint32_t *used);
uint32_t cdc_rice_encode(const uint32_t *v, uint32_t n, uint32_t *param, uint32_t *out);
int cdc_rice_decode(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, uint32_t *out, uint32_t *used);

#endif
