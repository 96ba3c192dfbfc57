/* What an index's postings would take in another codec or block size (cls_index_codec_stats):
 * every list is decoded with the reference decoder and re-encoded exactly as index_write.c
 * would, so the figures are the sizes a rebuild would produce. */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "err.h"
#include "index.h"
#include "index_write.h"

cls_status cls_index_codec_stats(const cls_index *x, cls_codec c, uint32_t block_size, unsigned pfor_depth,
                                 cls_index_stats *st)
{
    if (!x || !st) return err_set(CLS_E_ARG, "cls_index_codec_stats: NULL argument");
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = c;
    o.block_size = block_size;
    o.pfor_depth = pfor_depth;
    cls_status s = idx_check_opts(&o);
    if (s != CLS_OK) return s;
    cls_index_get_stats(x, st);
    st->codec = c;
    st->block_size = block_size;
    st->pfor_depth = pfor_depth;
    st->num_blocks = st->doc_bits = st->freq_bits = 0;

    uint32_t maxdf = 0;
    for (uint32_t t = 0; t < x->num_terms; t++)
        if (x->terms[t].df > maxdf) maxdf = x->terms[t].df;
    uint32_t *docs = malloc(((size_t)maxdf + IDX_MAX_BLOCK) * 4), *freqs = malloc(((size_t)maxdf + IDX_MAX_BLOCK) * 4);
    uint32_t *vals = malloc(((size_t)maxdf + 1) * 4), *out = malloc((size_t)cdc_max_words(CDC_MAX_N) * 4);
    if (!docs || !freqs || !vals || !out) {
        free(docs), free(freqs), free(vals), free(out);
        return err_set(CLS_E_NOMEM, "codec statistics: out of memory");
    }
    for (uint32_t t = 0; t < x->num_terms; t++) {
        const idx_term *e = &x->terms[t];
        uint32_t df = e->df, at = 0;
        for (uint32_t j = 0; j < e->num_blocks; j++) {
            idx_decode_block(x, (uint64_t)e->first_block + j, docs + at, freqs + at);
            at += idx_info_count(x->blocks[e->first_block + j].info);
        }
        uint32_t dlist = 0, flist = 0;
        if (c == CLS_CODEC_PFOR) {
            uint64_t m = 0;
            for (uint32_t i = 0; i < df; i++)
                if (i % block_size) vals[m++] = docs[i] - docs[i - 1] - 1;
            dlist = cdc_list_param(c, vals, m);
            for (uint32_t i = 0; i < df; i++) vals[i] = freqs[i] - 1;
            flist = cdc_list_param(c, vals, df);
        }
        for (uint32_t i = 0; i < df; i += block_size) {
            uint32_t n = df - i < block_size ? df - i : block_size, p;
            uint32_t gaps[CDC_MAX_N], tfs[CDC_MAX_N];
            for (uint32_t k = 0; k < n; k++) {
                if (k) gaps[k - 1] = docs[i + k] - docs[i + k - 1] - 1;
                tfs[k] = freqs[i + k] - 1;
            }
            st->doc_bits += 32ull * cdc_encode(c, gaps, n - 1, dlist, pfor_depth, &p, out);
            st->freq_bits += 32ull * cdc_encode(c, tfs, n, flist, pfor_depth, &p, out);
            st->num_blocks++;
        }
    }
    st->postings_bytes = (st->doc_bits + st->freq_bits) / 8;
    st->meta_bytes = st->num_blocks * sizeof(idx_block);
    free(docs), free(freqs), free(vals), free(out);
    return CLS_OK;
}
