/* Encoding posting lists into blocks and writing the index (index_write.h).
 *
 * Each list is cut into blocks of block_size postings (the last may be partial). A block's
 * docID stream holds its n-1 gaps d_i - d_{i-1} - 1 and its frequency stream the n values
 * tf - 1, both coded by the index's codec; the block's metadata keeps its first and last docID,
 * where its words start, the codec's two parameter words and its largest BM25 contribution.
 */
#include "index/index_write.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    }
    return CLS_OK;
}

/* The postings of lists t0 .. t1 - 1, docs and freqs from list_start[t0]: check_lists' last
 * rule, checked chunk by chunk where the encoders have them. */
static cls_status check_postings(const idx_lists *l, uint32_t t0, uint32_t t1, const uint32_t *docs,
                                 const uint32_t *freqs)
{
    const uint64_t base = l->list_start[t0];
    for (uint32_t t = t0; t < t1; t++) {
        uint64_t s = l->list_start[t] - base, e = l->list_start[t + 1] - base;
        for (uint64_t i = s; i < e; i++)
            if (docs[i] >= l->num_docs || (i > s && docs[i] <= docs[i - 1]) || freqs[i] == 0) {
                uint64_t a = l->term_off[t], b = l->term_off[t + 1];
                return err_set(CLS_E_FORMAT, "term '%.*s': docIDs out of order or out of range, or a zero frequency",
                               (int)(b - a > 200 ? 200 : b - a), l->term_blob + a);
            }
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

/* ---- Chunks encoded on threads -------------------------------------------------------------- */

/* A chunk: the lists t0 .. t1 - 1, its blocks written in place (the lists' first_block), its
 * words in a buffer of its own until the layout; a failure keeps its status and message. */
typedef struct enc_chunk {
    uint32_t t0, t1;
    idx_words wb;
    cls_status st;
    char msg[512];
} enc_chunk;

typedef struct enc_job {
    const idx_lists *l;
    const cls_build_opts *o;
    const idx_term *terms;
    const float *weight, *norm;
    idx_block *blocks;
    enc_chunk *chunks;
    uint32_t nchunks;
    uint64_t room;           /* the largest chunk's postings: each thread's fill buffers */
    atomic_uint next;        /* the next chunk to take, in order */
    atomic_int failed;
    pthread_mutex_t mu;      /* guards the seconds below, and the device encoder */
    double merge, code;
    idx_encoder *dev;        /* o->device's encoder (the threads take it in turn), or NULL */
} enc_job;

/* One encoder: takes chunks in order until none is left or one failed. Chunks are taken in
 * increasing order, so when one fails every chunk before it has been finished, and the first
 * failing chunk is the first fault. */
static void *enc_thread(void *arg)
{
    enc_job *j = arg;
    const idx_lists *l = j->l;
    uint32_t *vals = fault_malloc(((size_t)l->num_docs + 1) * 4); /* one list's values, for pfor's width */
    uint32_t *docs = NULL, *freqs = NULL;
    if (l->fill) {
        docs = fault_malloc((size_t)(j->room + 1) * 4);
        freqs = fault_malloc((size_t)(j->room + 1) * 4);
    }
    double merge = 0, code = 0;
    for (;;) {
        uint32_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->nchunks || atomic_load(&j->failed)) break;
        enc_chunk *ch = &j->chunks[c];
        cls_status st = CLS_OK;
        if (!vals || (l->fill && (!docs || !freqs)))
            st = err_set(CLS_E_NOMEM, "encoding: out of memory for an encoder's buffers");
        const uint64_t s0 = l->list_start[ch->t0];
        const uint32_t *d = l->fill ? docs : l->docs + s0, *f = l->fill ? freqs : l->freqs + s0;
        double t0 = idx_clock();
        if (st == CLS_OK && l->fill) st = l->fill(l->fill_user, ch->t0, ch->t1, docs, freqs);
        double t1 = idx_clock();
        if (st == CLS_OK) st = check_postings(l, ch->t0, ch->t1, d, f);
        if (st == CLS_OK) {
            /* the one place a chunk is coded: a device encoder takes the same chunk */
            idx_chunk chunk = {.num_lists = ch->t1 - ch->t0, .list_start = l->list_start + ch->t0, .docs = d,
                               .freqs = f, .weight = j->weight + ch->t0};
            idx_block *bl = j->blocks + j->terms[ch->t0].first_block;
            if (j->dev) {
                pthread_mutex_lock(&j->mu);
                st = idx_encode_chunk_dev(j->dev, j->o, &chunk, l->scoring, j->norm, bl, &ch->wb);
                pthread_mutex_unlock(&j->mu);
            } else {
                st = idx_encode_chunk(j->o, &chunk, l->scoring, j->norm, vals, bl, &ch->wb);
            }
        }
        merge += t1 - t0;
        code += idx_clock() - t1;
        if (st != CLS_OK) {
            ch->st = st;
            snprintf(ch->msg, sizeof ch->msg, "%s", cls_last_error());
            atomic_store(&j->failed, 1);
        }
    }
    free(vals);
    free(docs);
    free(freqs);
    pthread_mutex_lock(&j->mu);
    j->merge += merge;
    j->code += code;
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Cuts the dictionary into chunks, encodes them on o->threads threads (the calling thread alone
 * for 1) and lays their words out in order into *wb, moving each chunk's blocks' offsets by the
 * words before it. With a device encoder (dev) the threads still gather (merge) their chunks and
 * hand them to the device one at a time. */
static cls_status encode_chunks(const idx_lists *l, const cls_build_opts *o, const idx_term *terms,
                                const float *weight, const float *norm, idx_encoder *dev, idx_block *blocks,
                                idx_words *wb, idx_write_times *tm)
{
    const uint32_t T = l->num_terms;
    const uint64_t aim = l->chunk_postings ? l->chunk_postings : IDX_CHUNK_POSTINGS;
    enc_job j = {.l = l, .o = o, .terms = terms, .weight = weight, .norm = norm, .blocks = blocks, .dev = dev};
    uint32_t n = 0;
    for (uint32_t t = 0; t < T; n++) { /* count, then cut: a chunk ends where it reaches aim */
        uint64_t s = l->list_start[t];
        do t++; while (t < T && l->list_start[t + 1] - s <= aim);
    }
    if (!(j.chunks = fault_calloc((size_t)n + 1, sizeof *j.chunks)))
        return err_set(CLS_E_NOMEM, "encoding: out of memory for %u chunks", n);
    j.nchunks = n;
    n = 0;
    for (uint32_t t = 0; t < T; n++) {
        uint64_t s = l->list_start[t];
        j.chunks[n].t0 = t;
        do t++; while (t < T && l->list_start[t + 1] - s <= aim);
        j.chunks[n].t1 = t;
        if (l->list_start[t] - s > j.room) j.room = l->list_start[t] - s;
    }
    unsigned threads = o->threads;
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c < 1 ? 1u : c > 1024 ? 1024u : (unsigned)c;
    }
    if (threads > j.nchunks) threads = j.nchunks ? j.nchunks : 1;
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    cls_status st = CLS_OK;
    pthread_t *th = NULL;
    unsigned started = 0;
    if (pthread_mutex_init(&j.mu, NULL) != 0) {
        free(j.chunks);
        return err_set(CLS_E_NOMEM, "encoding: cannot create a mutex");
    }
    if (threads > 1 && (th = fault_malloc(threads * sizeof *th)) != NULL)
        for (; started < threads; started++)
            if (pthread_create(&th[started], NULL, enc_thread, &j) != 0) break;
    if (started == 0) enc_thread(&j); /* one thread, or none could start: the calling thread's */
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&j.mu);
    tm->merge = j.merge;
    tm->code = j.code;
    tm->threads = started ? started : 1;
    tm->chunks = j.nchunks;
    for (uint32_t c = 0; c < j.nchunks && st == CLS_OK; c++)
        if (j.chunks[c].st != CLS_OK) st = err_set(j.chunks[c].st, "%s", j.chunks[c].msg);

    double t_layout = idx_clock();
    uint64_t total = 0;
    for (uint32_t c = 0; c < j.nchunks && st == CLS_OK; c++) total += j.chunks[c].wb.n;
    if (st == CLS_OK && total > UINT32_MAX) st = err_set(CLS_E_ARG, "index too large: postings exceed 2^32 words");
    if (st == CLS_OK && j.nchunks == 1) { /* one chunk: its words are the layout */
        *wb = j.chunks[0].wb;
        j.chunks[0].wb = (idx_words){0};
    } else if (st == CLS_OK && !vec_reserve(&wb->w, &wb->cap, (size_t)total + 1, sizeof *wb->w)) {
        st = err_set(CLS_E_NOMEM, "encoding: out of memory for %llu words of postings", (unsigned long long)total);
    } else if (st == CLS_OK) {
        for (uint32_t c = 0; c < j.nchunks; c++) {
            const enc_chunk *ch = &j.chunks[c];
            for (uint32_t bl = terms[ch->t0].first_block; bl < terms[ch->t1].first_block; bl++)
                blocks[bl].offset += (uint32_t)wb->n;
            if (ch->wb.n) memcpy(wb->w + wb->n, ch->wb.w, (size_t)ch->wb.n * sizeof *wb->w);
            wb->n += ch->wb.n;
            free(ch->wb.w);
            j.chunks[c].wb.w = NULL;
        }
    }
    for (uint32_t c = 0; c < j.nchunks; c++) free(j.chunks[c].wb.w);
    free(j.chunks);
    tm->layout = idx_clock() - t_layout;
    return st;
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
    idx_words wb = {0};
    if (!terms || !blocks || !norm) {
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
    terms[T].first_block = (uint32_t)nb;
    idx_write_times tm = {0};
    idx_encoder *dev = NULL;
    if (o->device) {
        if (!(dev = fault_malloc(sizeof *dev))) st = err_set(CLS_E_NOMEM, "writing the index: out of memory");
        else if ((st = idx_encoder_open(dev, o->device, o, l->scoring)) != CLS_OK) {
            free(dev);
            dev = NULL;
            st = err_wrap(st, "encoding on device '%s': ", o->device);
        } else {
            snprintf(tm.device, sizeof tm.device, "%s", idx_encoder_describe(dev));
            st = idx_encoder_norms(dev, norm, N);
        }
    }
    if (st == CLS_OK) st = encode_chunks(l, o, terms, weight, norm, dev, blocks, &wb, &tm);
    if (dev) {
        idx_encoder_close(dev);
        free(dev);
    }
    free(weight);
    if (st != CLS_OK) goto out;
    tm.encode = idx_clock() - t_encode - tm.layout;
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
    tm.write = idx_clock() - t_write;
    if (l->times) *l->times = tm;
out:
    free(terms);
    free(blocks);
    free(norm);
    free(wb.w);
    return st;
}
