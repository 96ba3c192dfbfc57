/* Rewriting an index in another codec or block size (cls_index_recode): every list is decoded
 * with the reference decoder and handed, with the documents, stored fields, collection record and
 * dictionary as they are, to the same writer the builder uses. No text is read again; a version 3
 * file comes out as version 4 without fields, and a shard as the same shard. */
#include <stdlib.h>

#include "util/err.h"
#include "index/index.h"
#include "index/index_write.h"

cls_status cls_index_recode(const cls_index *x, const cls_build_opts *o, const char *path)
{
    if (!x || !o || !path) return err_set(CLS_E_ARG, "cls_index_recode: NULL argument");
    cls_status s = idx_check_opts(o);
    if (s == CLS_OK) s = idx_verify_words(x); /* never carry damage into a file with fresh checksums */
    if (s == CLS_OK) s = idx_verify_fields(x);
    if (s != CLS_OK) return s;
    uint32_t *docs = malloc((size_t)(x->num_postings + IDX_MAX_BLOCK) * 4);
    uint32_t *freqs = malloc((size_t)(x->num_postings + IDX_MAX_BLOCK) * 4);
    uint64_t *start = malloc(((size_t)x->num_terms + 1) * sizeof *start);
    uint32_t *cdf = x->shards ? malloc(((size_t)x->num_terms + 1) * sizeof *cdf) : NULL;
    if (!docs || !freqs || !start || (x->shards && !cdf)) {
        free(docs), free(freqs), free(start), free(cdf);
        return err_set(CLS_E_NOMEM, "recoding: out of memory for %llu postings", (unsigned long long)x->num_postings);
    }
    uint64_t at = 0;
    for (uint32_t t = 0; t < x->num_terms; t++) {
        start[t] = at;
        uint32_t n;
        if ((s = idx_decode_list(x, t, docs + at, freqs + at, &n)) != CLS_OK) {
            free(docs), free(freqs), free(start), free(cdf);
            return s;
        }
        at += n;
        if (cdf) cdf[t] = x->terms[t].cdf;
    }
    start[x->num_terms] = at;
    /* a shard stays the same shard: its place and its collection's statistics */
    idx_shard sh = {.shard = x->shard, .shards = x->shards, .doc_base = x->doc_base, .coll_docs = x->coll_docs,
                    .coll_tokens = x->coll_tokens, .cdf = cdf};
    idx_lists l = {
        .analyzer = x->analyzer,
        .scoring = x->scoring,
        .num_docs = x->num_docs,
        .doclen = x->doclen,
        .docno_off = x->docno_off,
        .docno_blob = x->docno_blob,
        .docno_blob_len = x->docno_off[x->num_docs],
        .num_terms = x->num_terms,
        .term_off = x->term_off,
        .term_blob = x->term_blob,
        .list_start = start,
        .docs = docs,
        .freqs = freqs,
        /* the collection record and the stored fields as they are (none in a version 3 file) */
        .collection = x->coll_raw,
        .collection_len = x->coll_raw_len,
        .num_fields = x->coll.num_fields,
        .field_off = x->field_off,
        .field_blob = x->field_blob,
        .field_blob_len = x->field_blob_len,
        .source = x, /* read from its mapping as it is written: no file if that shrinks meanwhile */
        .shard = x->shards ? &sh : NULL,
    };
    s = idx_write_lists(path, &l, o);
    free(docs), free(freqs), free(start), free(cdf);
    return s == CLS_OK ? cls_index_intact(x) : idx_intact(x, s);
}
