/* Posting-list codecs, the reference (plain C) side: how one stream of a block (its n-1 docID
 * gaps, or its n frequencies minus one) becomes 32-bit words and back. Each codec's device twin
 * is its kernel fragment cl/codec_<name>.cl; docs/FORMAT.md specifies each layout.
 *
 * A stream is coded on its own: its words start at a word boundary and the decoder needs
 * only the words, the value count n (0..IDX_MAX_BLOCK) and the parameter word the encoder
 * chose (stored in the block's metadata as dparam / fparam). Some codecs also use a
 * list-wide parameter (pfor's bit width, chosen over all of a list's values) and the index's
 * pfor depth; the encoder folds whatever the decoder needs into the parameter word or the
 * stream itself, so decoding never needs the rest of the list.
 *
 * Decoders are strict: cdc_decode reads nothing past the words it is given and reports a
 * stream that is malformed or does not end exactly at its last word. The host runs it on every
 * block it reads (idx_decode_block) and cls_index_check on every block of a file. The device
 * decoders test the same rules in the engine's check of every block at its start (cl/decode.cl:
 * check_blocks); the search's decoders do not, and decode any stream without reading or writing
 * out of bounds, a malformed one to wrong values.
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

/* ---- The codec table (codec.c) -------------------------------------------------------------
 *
 * A codec is one file src/codec/codec_<name>.c holding its encoder, its strict decoder and its
 * descriptor, `const cdc_codec cdc_codec_<name>`, plus its device decoder cl/codec_<name>.cl;
 * codec.c's table lists the descriptors in cls_codec order (its head says how to add one) and
 * every function above dispatches through it. */

/* Encodes v[0..n) as cdc_encode does (list_param and depth may be ignored). */
typedef uint32_t cdc_encode_fn(const uint32_t *v, uint32_t n, uint32_t list_param, unsigned depth, uint32_t *param,
                               uint32_t *out);
/* Decodes as cdc_decode does, n <= CDC_MAX_N already checked (depth may be ignored). */
typedef int cdc_decode_fn(const uint32_t *w, uint32_t avail, uint32_t n, uint32_t param, unsigned depth,
                          uint32_t *out, uint32_t *used);
/* The list-wide parameter over a whole list's stream values v[0..n). */
typedef uint32_t cdc_list_param_fn(const uint32_t *v, uint64_t n);

typedef struct cdc_codec {
    const char *name;              /* as --codec takes it and cls_codec_name gives it */
    const char *help;              /* one line for the command's help */
    cdc_encode_fn *encode;
    cdc_decode_fn *decode;
    cdc_list_param_fn *list_param; /* NULL: the codec has none (cdc_list_param gives 0) */
    int uses_depth;                /* whether the index's pfor depth shapes its streams */
    const char *kernel;            /* its device decoder: a file of cl/, "codec_<name>.cl" */
} cdc_codec;

/* Codec c's descriptor (a row of codec.c's table); NULL for a value outside cls_codec. */
const cdc_codec *cdc_get(cls_codec c);

/* The kernel fragment of codec c (cl/decode.cl says what it defines), which the decode
 * program compiles ahead of decode.cl; NULL for a value outside cls_codec. */
const char *cdc_kernel_file(cls_codec c);

#endif
