/* Encoding posting lists into blocks and writing the index (index_write.h).
 *
 * Each list is cut into blocks of block_size postings (the last may be partial). A block's
 * docID stream holds its n-1 gaps d_i - d_{i-1} - 1 and its frequency stream the n values
 * tf - 1, both coded by the index's codec; the block's metadata keeps its first and last docID,
 * where its words start, the codec's two parameter words and its largest BM25 contribution.
 */
#include "index/index_write.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "util/err.h"
#include "index/index_file.h"
#include "index/bm25.h"
#include "index/encode_dev.h"
#include "util/vec.h"
#include "util/fault.h"

void cls_build_defaults(cls_build_opts *o)
{
    o->codec = CLS_CODEC_BP;
    o->block_size = 128;
    o->pfor_depth = 1;
    o->threads = 0;
    o->device = NULL;
}

cls_status idx_check_opts(const cls_build_opts *o)
{
    if (!o) return err_set(CLS_E_ARG, "build options are NULL");
    if (!cls_codec_name(o->codec)) return err_set(CLS_E_ARG, "unknown codec %d", (int)o->codec);
    if (o->block_size != 64 && o->block_size != 128 && o->block_size != 256 && o->block_size != 512)
        return err_set(CLS_E_ARG, "block size %u: use 64, 128, 256 or 512", o->block_size);
    if (o->pfor_depth > IDX_MAX_PFOR_DEPTH)
        return err_set(CLS_E_ARG, "pfor depth %u: use 0 to %u", o->pfor_depth, IDX_MAX_PFOR_DEPTH);
    if (o->threads > 1024) return err_set(CLS_E_ARG, "%u threads: at most 1024", o->threads);
    return CLS_OK;
}

int idx_term_ref_cmp(const void *a, const void *b)
{
    const idx_term_ref *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

static cls_status check_lists(const idx_lists *l)
{
    uint32_t N = l->num_docs;
    if (l->docno_off[0] != 0 || l->docno_off[N] != l->docno_blob_len)
        return err_set(CLS_E_FORMAT, "document names: bad bounds");
    for (uint32_t d = 0; d < N; d++)
        if (l->docno_off[d + 1] <= l->docno_off[d] || l->docno_blob[l->docno_off[d + 1] - 1] != '\0')
            return err_set(CLS_E_FORMAT, "document %u: empty or unterminated name", d);
    /* the fields: as many as the collection record names, each document's value in its place */
    idx_collection coll = {0};
    if (l->collection) {
        const char *what = idx_collection_read(l->collection, l->collection_len, &coll);
        if (what) return err_set(CLS_E_FORMAT, "collection record: %s", what);
        idx_collection_free(&coll);
    }
    if (coll.num_fields != l->num_fields)
        return err_set(CLS_E_FORMAT, "stored fields: %u named, %u given", coll.num_fields, l->num_fields);
    uint32_t ff, fd;
    const char *section, *what = idx_fields_problem(l->field_off, l->field_blob, l->field_blob_len, N, l->num_fields,
                                                    &ff, &fd, &section);
    if (what) return err_set(CLS_E_FORMAT, "stored field %u, document %u: %s", ff, fd, what);
    const idx_shard *sh = l->shard;
    if (sh && (sh->shards == 0 || sh->shards > IDX_MAX_SHARDS || sh->shard >= sh->shards ||
               (uint64_t)sh->doc_base + N > sh->coll_docs))
        return err_set(CLS_E_FORMAT, "shard %u of %u at document %u: out of range of its collection of %u documents",
                       sh->shard, sh->shards, sh->doc_base, sh->coll_docs);
    if (l->list_start[0] != 0) return err_set(CLS_E_FORMAT, "posting lists: bad start");
    for (uint32_t t = 0; t < l->num_terms; t++) {
        uint64_t a = l->term_off[t], b = l->term_off[t + 1];
        if (b <= a) return err_set(CLS_E_FORMAT, "term %u is empty", t);
        if (t > 0) {
            uint64_t pa = l->term_off[t - 1], pn = a - pa, n = b - a;
            int c = memcmp(l->term_blob + pa, l->term_blob + a, pn < n ? pn : n);
            if (c > 0 || (c == 0 && pn >= n))
                return err_set(CLS_E_FORMAT, "term '%.*s' is out of order or repeated", (int)(n > 200 ? 200 : n),
                               l->term_blob + a);
        }
        uint64_t s = l->list_start[t], e = l->list_start[t + 1];
        if (e < s || (e == s && !l->shard) || e - s > N)
            return err_set(CLS_E_FORMAT, "term '%.*s': %s posting list", (int)(b - a > 200 ? 200 : b - a),
                           l->term_blob + a, e <= s ? "empty" : "over-long");
        if (l->shard && (l->shard->cdf[t] == 0 || l->shard->cdf[t] < e - s ||
                         l->shard->cdf[t] - (e - s) > l->shard->coll_docs - N))
            return err_set(CLS_E_FORMAT, "term '%.*s': collection df %u does not fit its %llu postings in the shard",
                           (int)(b - a > 200 ? 200 : b - a), l->term_blob + a, l->shard->cdf[t],
                           (unsigned long long)(e - s));
        for (uint64_t i = s; i < e; i++)
            if (l->docs[i] >= N || (i > s && l->docs[i] <= l->docs[i - 1]) || l->freqs[i] == 0)
                return err_set(CLS_E_FORMAT, "term '%.*s': docIDs out of order or out of range, or a zero frequency",
                               (int)(b - a > 200 ? 200 : b - a), l->term_blob + a);
    }
    return CLS_OK;
}

cls_status idx_encode_list(const cls_build_opts *o, const uint32_t *docs, const uint32_t *freqs, uint32_t df,
                           cls_scoring scoring, float w, const float *norm, uint32_t *vals, idx_block *blocks,
                           idx_words *wb)
{
    const uint32_t B = o->block_size;
    /* List-wide parameters (pfor's width) over the very values the blocks will code, for the
     * codecs that have one (codec.h: cdc_codec.list_param); 0 for the others. */
    const cdc_codec *cd = cdc_get(o->codec);
    uint32_t dlist = 0, flist = 0;
    if (cd && cd->list_param) {
        uint64_t m = 0;
        for (uint32_t i = 0; i < df; i++)
            if (i % B) vals[m++] = docs[i] - docs[i - 1] - 1;
        dlist = cdc_list_param(o->codec, vals, m);
        for (uint32_t i = 0; i < df; i++) vals[i] = freqs[i] - 1;
        flist = cdc_list_param(o->codec, vals, df);
    }
    for (uint32_t i = 0; i < df; i += B) {
        uint32_t n = df - i < B ? df - i : B;
        uint32_t gaps[CDC_MAX_N], tfs[CDC_MAX_N];
        float best = 0.0f;
        for (uint32_t j = 0; j < n; j++) {
            if (j) gaps[j - 1] = docs[i + j] - docs[i + j - 1] - 1;
            tfs[j] = freqs[i + j] - 1;
            float c = norm ? score_contrib(scoring, w, freqs[i + j], norm[docs[i + j]]) : 0.0f;
            if (c > best) best = c;
        }
        if (!vec_reserve(&wb->w, &wb->cap, wb->n + 2 * (size_t)cdc_max_words(n), sizeof *wb->w))
            return err_set(CLS_E_NOMEM, "encoding: out of memory for the postings");
        idx_block *bl = &blocks[i / B];
        memset(bl, 0, sizeof *bl);
        uint32_t wd = cdc_encode(o->codec, gaps, n - 1, dlist, o->pfor_depth, &bl->dparam, wb->w + wb->n);
        uint32_t wf = cdc_encode(o->codec, tfs, n, flist, o->pfor_depth, &bl->fparam, wb->w + wb->n + wd);
        if (wd > IDX_MAX_FOFS || wb->n > UINT32_MAX) return err_set(CLS_E_ARG, "index too large: postings exceed 2^32 words");
        bl->first = docs[i];
        bl->last = docs[i + n - 1];
        bl->offset = (uint32_t)wb->n;
        bl->info = IDX_INFO(n, wd);
        bl->max_score = best;
        wb->n += wd + wf;
    }
    return CLS_OK;
}

cls_status idx_encode_chunk(const cls_build_opts *o, const idx_chunk *c, cls_scoring scoring, const float *norm,
                            uint32_t *vals, idx_block *blocks, idx_words *wb)
{
    const uint64_t base = c->list_start[0];
    uint64_t nb = 0;
    for (uint32_t i = 0; i < c->num_lists; i++) {
        uint64_t s = c->list_start[i] - base, e = c->list_start[i + 1] - base;
        uint32_t df = (uint32_t)(e - s);
        cls_status st = idx_encode_list(o, c->docs + s, c->freqs + s, df, scoring, c->weight[i], norm, vals,
                                        blocks + nb, wb);
        if (st != CLS_OK) return st;
        nb += (df + o->block_size - 1) / o->block_size;
    }
    return CLS_OK;
}

double idx_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

cls_status idx_write_lists(const char *path, const idx_lists *l, const cls_build_opts *o)
{
    cls_status st = idx_check_opts(o);
    if (st != CLS_OK || (st = check_lists(l)) != CLS_OK) return st;
    const uint32_t B = o->block_size, T = l->num_terms, N = l->num_docs;
    uint64_t P = l->list_start[T], tokens = 0;
    for (uint32_t d = 0; d < N; d++) tokens += l->doclen[d];
    /* the blocks' max_score at the collection's statistics: a shard's are its whole index's */
    const idx_shard *sh = l->shard;
    if (sh && (tokens > sh->coll_tokens || (N == sh->coll_docs && tokens != sh->coll_tokens)))
        return err_set(CLS_E_FORMAT, "shard of %llu tokens: does not fit its collection's %llu",
                       (unsigned long long)tokens, (unsigned long long)sh->coll_tokens);
    const uint32_t CN = sh ? sh->coll_docs : N;
    const uint64_t ctokens = sh ? sh->coll_tokens : tokens;
    double avgdl = CN && ctokens ? (double)ctokens / CN : 1.0;

    uint64_t max_blocks = P / B + T + 1;
    idx_term *terms = fault_calloc((size_t)T + 1, sizeof *terms);
    idx_block *blocks = fault_malloc((size_t)max_blocks * sizeof *blocks);
    float *norm = fault_malloc(((size_t)N + 1) * sizeof *norm);
    uint32_t *vals = fault_malloc(((size_t)N + 1) * 4); /* one list's stream values, for pfor's list width */
    idx_words wb = {0};
    if (!terms || !blocks || !norm || !vals) {
        st = err_set(CLS_E_NOMEM, "writing the index: out of memory");
        goto out;
    }
    for (uint32_t d = 0; d < N; d++) norm[d] = bm25_norm(IDX_SCORE_K1, IDX_SCORE_B, l->doclen[d], avgdl);

    float *weight = fault_malloc(((size_t)T + 1) * sizeof *weight);
    if (!weight) {
        st = err_set(CLS_E_NOMEM, "writing the index: out of memory");
        goto out;
    }
    double t_encode = idx_clock();
    uint64_t nb = 0;
    for (uint32_t t = 0; t < T; t++) {
        uint32_t df = (uint32_t)(l->list_start[t + 1] - l->list_start[t]);
        terms[t].df = df;
        terms[t].first_block = (uint32_t)nb;
        terms[t].num_blocks = (df + B - 1) / B;
        terms[t].cdf = sh ? sh->cdf[t] : 0;
        weight[t] = bm25_block_weight(l->scoring, CN, sh ? sh->cdf[t] : df);
        nb += terms[t].num_blocks;
    }
    idx_chunk all = {.num_lists = T, .list_start = l->list_start, .docs = l->docs, .freqs = l->freqs, .weight = weight};
    char device[sizeof l->times->device] = "";
    st = o->device ? idx_encode_lists_dev(o->device, o, &all, l->scoring, norm, N, blocks, &wb, device, sizeof device)
                   : idx_encode_chunk(o, &all, l->scoring, norm, vals, blocks, &wb);
    free(weight);
    if (st != CLS_OK) goto out;
    if (wb.n > UINT32_MAX) {
        st = err_set(CLS_E_ARG, "index too large: postings exceed 2^32 words");
        goto out;
    }
    idx_file_parts parts = {
        .analyzer = l->analyzer,
        .scoring = l->scoring,
        .codec = o->codec,
        .block_size = B,
        .pfor_depth = o->pfor_depth,
        .num_docs = N,
        .num_terms = T,
        .num_postings = P,
        .num_tokens = tokens,
        .doclen = l->doclen,
        .docno_off = l->docno_off,
        .docno_blob = l->docno_blob,
        .docno_blob_len = l->docno_blob_len,
        .terms = terms,
        .term_off = l->term_off,
        .term_blob = l->term_blob,
        .term_blob_len = l->term_off[T],
        .blocks = blocks,
        .num_blocks = nb,
        .words = wb.w,
        .num_words = wb.n,
        .collection = l->collection,
        .collection_len = l->collection_len,
        .num_fields = l->num_fields,
        .field_off = l->field_off,
        .field_blob = l->field_blob,
        .field_blob_len = l->field_blob_len,
        .source = l->source,
        .shards = sh ? sh->shards : 0,
        .shard = sh ? sh->shard : 0,
        .doc_base = sh ? sh->doc_base : 0,
        .coll_docs = sh ? sh->coll_docs : 0,
        .coll_tokens = sh ? sh->coll_tokens : 0,
    };
    double t_write = idx_clock();
    st = idx_file_write(path, &parts);
    if (l->times) {
        *l->times = (idx_write_times){.encode = t_write - t_encode, .write = idx_clock() - t_write};
        memcpy(l->times->device, device, sizeof device);
    }
out:
    free(terms);
    free(blocks);
    free(norm);
    free(vals);
    free(wb.w);
    return st;
}
