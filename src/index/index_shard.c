/* Document-range shards (index_shard.h): their ranges balanced by postings, writing one, and
 * reading a shard's place. */
#include "index/index_shard.h"

#include <stdlib.h>
#include <string.h>

#include "index/index_write.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

cls_status idx_doc_postings(const cls_index *x, uint32_t *count)
{
    memset(count, 0, (size_t)x->num_docs * sizeof *count);
    cls_status s = idx_verify_words(x);
    uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK];
    for (uint64_t b = 0; b < x->num_blocks && s == CLS_OK; b++) {
        if ((s = idx_decode_block(x, b, docs, freqs)) != CLS_OK) break;
        /* docIDs below num_docs: the strict decoder ends them at the block's checked last */
        for (uint32_t i = 0, n = idx_info_count(x->blocks[b].info); i < n; i++) count[docs[i]]++;
    }
    return s == CLS_OK ? cls_index_intact(x) : idx_intact(x, s);
}

void idx_shard_balance(const uint32_t *weight, uint32_t N, uint32_t shards, uint32_t *bounds)
{
    uint64_t total = 0;
    for (uint32_t d = 0; d < N; d++) total += weight[d];
    const int by_docs = total == 0;
    if (by_docs) total = N;
    bounds[0] = 0;
    uint32_t i = 1;
    uint64_t acc = 0; /* the weight of documents [0, d) */
    for (uint32_t d = 0; i < shards; d++) {
        /* boundary d is the first to reach share i; d - 1, which fell short of it, may be nearer
         * (acc reaches total at d = N, so every share is placed by then) */
        for (; i < shards; i++) {
            uint64_t target = total / shards * i + total % shards * i / shards; /* floor(total i / n) */
            if (acc < target) break;
            uint64_t prev = d > 0 ? acc - (by_docs ? 1 : weight[d - 1]) : 0;
            bounds[i] = d > bounds[i - 1] && target - prev <= acc - target ? d - 1 : d;
        }
        if (d == N) break;
        acc += by_docs ? 1 : weight[d];
    }
    bounds[shards] = N;
}

cls_status cls_index_shard_bounds(const cls_index *x, uint32_t shards, uint32_t *bounds)
{
    if (!x || !bounds) return err_set(CLS_E_ARG, "cls_index_shard_bounds: NULL argument");
    if (shards == 0 || shards > IDX_MAX_SHARDS)
        return err_set(CLS_E_ARG, "%u shards: an index is cut into 1 to %u", shards, IDX_MAX_SHARDS);
    uint32_t *count = fault_malloc(((size_t)x->num_docs + 1) * sizeof *count);
    if (!count) return err_set(CLS_E_NOMEM, "out of memory for the postings of %u documents", x->num_docs);
    cls_status s = idx_doc_postings(x, count);
    if (s == CLS_OK) idx_shard_balance(count, x->num_docs, shards, bounds);
    free(count);
    return s;
}

/* The postings of documents [lo, hi) of term t's list, their docIDs less lo, appended at
 * (*docs, *freqs)[*at ..]: only the blocks that reach into the range are decoded. */
static cls_status cut_list(const cls_index *x, uint32_t t, uint32_t lo, uint32_t hi, uint32_t **docs,
                           uint32_t **freqs, size_t *dcap, size_t *fcap, uint64_t *at)
{
    const idx_term *e = &x->terms[t];
    for (uint32_t j = 0; j < e->num_blocks; j++) {
        uint64_t b = (uint64_t)e->first_block + j;
        const idx_block *bl = &x->blocks[b];
        if (bl->last < lo) continue;
        if (bl->first >= hi) break; /* the blocks' docIDs increase along the list */
        uint32_t n = idx_info_count(bl->info);
        if (!vec_reserve(docs, dcap, (size_t)*at + IDX_MAX_BLOCK, sizeof **docs) ||
            !vec_reserve(freqs, fcap, (size_t)*at + IDX_MAX_BLOCK, sizeof **freqs))
            return err_set(CLS_E_NOMEM, "cutting a shard: out of memory for %llu postings", (unsigned long long)*at);
        uint32_t *d = *docs + *at, *f = *freqs + *at, kept = 0;
        cls_status s = idx_decode_block(x, b, d, f);
        if (s != CLS_OK) return s;
        for (uint32_t i = 0; i < n; i++)
            if (d[i] >= lo && d[i] < hi) d[kept] = d[i] - lo, f[kept++] = f[i];
        *at += kept;
    }
    return CLS_OK;
}

cls_status cls_index_shard_write(const cls_index *x, uint32_t shard, uint32_t shards, uint32_t lo, uint32_t hi,
                                 const char *path)
{
    if (!x || !path) return err_set(CLS_E_ARG, "cls_index_shard_write: NULL argument");
    if (shards == 0 || shards > IDX_MAX_SHARDS)
        return err_set(CLS_E_ARG, "%u shards: an index is cut into 1 to %u", shards, IDX_MAX_SHARDS);
    if (shard >= shards) return err_set(CLS_E_ARG, "shard %u of %u: they are numbered 0 to %u", shard, shards, shards - 1);
    if (lo > hi || hi > x->num_docs)
        return err_set(CLS_E_ARG, "documents %u to %u: not a range of the index's %u documents", lo, hi, x->num_docs);
    /* a shard of a shard would need its collection's place as well as its own */
    if (x->shards)
        return err_set(CLS_E_ARG, "%s is shard %u of %u already: cut the whole index", x->path, x->shard, x->shards);
    cls_status s = idx_verify_words(x); /* never carry damage into a file with fresh checksums */
    if (s == CLS_OK) s = idx_verify_fields(x);
    if (s != CLS_OK) return s;
    const uint32_t N = hi - lo, T = x->num_terms, F = x->coll.num_fields, XN = x->num_docs;
    uint64_t flen = 0;
    for (uint32_t f = 0; f < F; f++)
        flen += x->field_off[(uint64_t)f * (XN + 1) + hi] - x->field_off[(uint64_t)f * (XN + 1) + lo];
    uint64_t *start = fault_malloc(((size_t)T + 1) * sizeof *start);
    uint32_t *cdf = fault_malloc(((size_t)T + 1) * sizeof *cdf);
    uint64_t *docno_off = fault_malloc(((size_t)N + 1) * sizeof *docno_off);
    uint64_t *field_off = fault_malloc((size_t)F * ((size_t)N + 1) * sizeof *field_off + 1);
    char *field_blob = fault_malloc((size_t)flen + 1);
    uint32_t *docs = NULL, *freqs = NULL;
    size_t dcap = 0, fcap = 0;
    /* the arrays are never NULL, so that an empty shard's lists are NULL + 0 nowhere */
    if (!start || !cdf || !docno_off || !field_off || !field_blob || !vec_reserve(&docs, &dcap, 1, sizeof *docs) ||
        !vec_reserve(&freqs, &fcap, 1, sizeof *freqs)) {
        s = err_set(CLS_E_NOMEM, "cutting a shard of %u documents: out of memory", N);
        goto out;
    }
    uint64_t at = 0;
    for (uint32_t t = 0; t < T && s == CLS_OK; t++) {
        start[t] = at;
        cdf[t] = x->terms[t].df; /* a whole index's df is its collection's */
        s = cut_list(x, t, lo, hi, &docs, &freqs, &dcap, &fcap, &at);
    }
    if (s != CLS_OK) goto out;
    start[T] = at;
    const uint64_t d0 = x->docno_off[lo];
    for (uint32_t d = 0; d <= N; d++) docno_off[d] = x->docno_off[lo + d] - d0;
    /* each field's values of the range, the fields one after another as section 11 lays them */
    uint64_t fat = 0;
    for (uint32_t f = 0; f < F; f++) {
        const uint64_t *o = x->field_off + (uint64_t)f * (XN + 1) + lo;
        for (uint32_t d = 0; d <= N; d++) field_off[(uint64_t)f * (N + 1) + d] = fat + (o[d] - o[0]);
        memcpy(field_blob + fat, x->field_blob + o[0], (size_t)(o[N] - o[0]));
        fat += o[N] - o[0];
    }
    const idx_shard sh = {.shard = shard, .shards = shards, .doc_base = lo, .coll_docs = XN,
                          .coll_tokens = x->num_tokens, .cdf = cdf};
    const idx_lists l = {
        .analyzer = x->analyzer,
        .scoring = x->scoring,
        .num_docs = N,
        .doclen = x->doclen + lo,
        .docno_off = docno_off,
        .docno_blob = x->docno_blob + d0,
        .docno_blob_len = docno_off[N],
        .num_terms = T,
        .term_off = x->term_off,
        .term_blob = x->term_blob,
        .list_start = start,
        .docs = docs,
        .freqs = freqs,
        .collection = x->coll_raw, /* the collection's format, roots and field names */
        .collection_len = x->coll_raw_len,
        .num_fields = F,
        .field_off = field_off,
        .field_blob = field_blob,
        .field_blob_len = flen,
        .source = x, /* read from its mapping as it is written: no file if that shrinks meanwhile */
        .shard = &sh,
    };
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = x->codec;
    o.block_size = x->block_size;
    o.pfor_depth = x->pfor_depth;
    s = idx_write_lists(path, &l, &o);
out:
    free(start), free(cdf), free(docno_off), free(field_off), free(field_blob), free(docs), free(freqs);
    return s == CLS_OK ? cls_index_intact(x) : idx_intact(x, s);
}

int cls_index_shard_info(const cls_index *x, uint32_t *base, uint32_t *collection_docs, uint32_t *shard,
                         uint32_t *shards)
{
    const int is = x && x->shards;
    if (base) *base = is ? x->doc_base : 0;
    if (collection_docs) *collection_docs = x ? x->coll_docs : 0;
    if (shard) *shard = is ? x->shard : 0;
    if (shards) *shards = is ? x->shards : 1;
    return is;
}
