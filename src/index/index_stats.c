/* What an index's postings would take in another codec or block size (cls_index_codec_stats):
 * every list is decoded with the reference decoder (the words verified first) and re-encoded by the writer's own
 * idx_encode_list, so the figures are the sizes a rebuild would produce. */
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "index/index.h"
#include "index/index_write.h"

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
    size_t room = (size_t)maxdf + IDX_MAX_BLOCK;
    uint32_t *docs = malloc(room * 4), *freqs = malloc(room * 4), *vals = malloc(room * 4);
    idx_block *blocks = malloc((room / IDX_MIN_BLOCK + 1) * sizeof *blocks);
    idx_words wb = {0};
    s = docs && freqs && vals && blocks ? CLS_OK : err_set(CLS_E_NOMEM, "codec statistics: out of memory");
    if (s == CLS_OK) s = idx_verify_words(x);
    for (uint32_t t = 0; t < x->num_terms && s == CLS_OK; t++) {
        uint32_t df;
        if ((s = idx_decode_list(x, t, docs, freqs, &df)) != CLS_OK) break;
        wb.n = 0; /* sizes only: each list's words start over */
        if ((s = idx_encode_list(&o, docs, freqs, df, x->scoring, 0.0f, NULL, vals, blocks, &wb)) != CLS_OK) break;
        uint32_t nb = (df + block_size - 1) / block_size;
        for (uint32_t j = 0; j < nb; j++) {
            uint64_t fofs = idx_info_fofs(blocks[j].info), end = j + 1 < nb ? blocks[j + 1].offset : wb.n;
            st->doc_bits += 32 * fofs;
            st->freq_bits += 32 * (end - blocks[j].offset - fofs);
        }
        st->num_blocks += nb;
    }
    free(docs), free(freqs), free(vals), free(blocks), free(wb.w);
    if ((s = s == CLS_OK ? cls_index_intact(x) : idx_intact(x, s)) != CLS_OK) return s;
    st->postings_bytes = (st->doc_bits + st->freq_bits) / 8;
    st->meta_bytes = st->num_blocks * sizeof(idx_block);
    return CLS_OK;
}
