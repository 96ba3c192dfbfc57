/* The index writer's encoding on an OpenCL device (cl/encode.cl), through the device layer
 * (src/device/dev.h): idx_encode_chunk_dev fulfils idx_encode_chunk's contract (index_write.h)
 * with the same output, bit for bit: block records and words. Every codec has its encoder there,
 * so a build asked to run on a device runs there whole or fails; it never falls back to the host.
 *
 * One encoder serves one layout (codec, block size, pfor depth) and scoring, for which its
 * program is built; its device buffers are sized by the first chunks and grow, never shrink. */
#ifndef CLS_INDEX_ENCODE_DEV_H
#define CLS_INDEX_ENCODE_DEV_H

#include "device/dev.h"
#include "index/index_write.h"

typedef struct idx_encoder {
    dev_ctx dc;
    cl_program prog;
    cls_build_opts o;     /* the layout the program was built for */
    cls_scoring scoring;
    uint32_t stride;      /* words of a block's scratch slot: two streams of cdc_max_words(B) */
    uint32_t batch_blocks; /* blocks a batch at most (the scratch's size) */
    const float *norm;    /* the host's norms that d_norm holds (idx_encoder_norms), or NULL */
    dbuf d_docs, d_freqs, d_ls, d_bmap, d_weight, d_lparam, d_norm, d_meta, d_counts, d_offs, d_total, d_scratch,
        d_words;
    uint32_t *ls, *bmap;  /* the chunk's list starts and block table, host side */
    size_t ls_cap, bmap_cap;
    char desc[1536];      /* which device, with what parameters (idx_encoder_describe) */
} idx_encoder;

/* The device spec names, checked for encoding an index of this scoring: not "ref", one that
 * exists, and one that divides as the host does (CLS_E_NODEVICE otherwise). Nothing is built:
 * the builder calls it when it is configured, so a bad -d fails before the analysis. */
cls_status idx_encoder_device(const char *spec, cls_scoring scoring, clx_device *dev);
/* Opens the device spec names ("cpu", "gpu", "P:D", "auto", as clx_select takes them) and builds
 * the encoders for o's layout and scoring. Fails (CLS_E_NODEVICE) on a device that cannot give
 * the host's block maxima bit for bit (no correctly rounded division). On failure everything is
 * released. */
cls_status idx_encoder_open(idx_encoder *e, const char *spec, const cls_build_opts *o, cls_scoring scoring);
/* idx_encoder_open with params ("WG_ENCODE=128,...", as CLSEARCH_PARAMS takes them; NULL: none)
 * applied over the parameters in force: the benchmark's sweep. */
cls_status idx_encoder_open_with(idx_encoder *e, const char *spec, const cls_build_opts *o, cls_scoring scoring,
                                 const char *params);
/* Uploads the documents' BM25 norms (num_docs floats) that block maxima are computed with; the
 * chunks that follow pass the same pointer as their norm. */
cls_status idx_encoder_norms(idx_encoder *e, const float *norm, uint32_t num_docs);
/* idx_encode_chunk on the device: the same blocks and words (appended to wb), bit for bit. o and
 * scoring must be those the encoder was opened with; norm NULL (max_score 0) or the array last
 * given to idx_encoder_norms. A chunk holds fewer than 2^32 postings. */
cls_status idx_encode_chunk_dev(idx_encoder *e, const cls_build_opts *o, const idx_chunk *c, cls_scoring scoring,
                                const float *norm, idx_block *blocks, idx_words *wb);
/* "device NAME (why chosen), WG_ENCODE=.. WG_SCAN_ALGO=.. (from ...), program ..." */
const char *idx_encoder_describe(const idx_encoder *e);
void idx_encoder_close(idx_encoder *e);

/* Postings of a chunk at most in bench encode's device runs: what the device holds of the
 * input at once. */
#define IDX_ENCODE_CHUNK_POSTINGS (1u << 24)

#endif
