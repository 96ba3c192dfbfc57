/* The index writer's encoders on the device (cl/encode.cl, src/index/encode_dev.c) against their
 * plain-C twins (idx_encode_chunk), bit for bit, on the tests' OpenCL device (POCL): every codec
 * at every block size and pfor depth, on random lists made to reach every branch of the codecs
 * (widths 0 to 32, exceptions at each level of pfor's tree, rice's escape), in batches split
 * small and in chunks appended one after another; and `clsearch index -d` writing the file the
 * host writes, byte for byte, for every codec. The data part does the same on CACM's real lists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "index/bm25.h"
#include "index/encode_dev.h"
#include "index/index.h"
#include "index/index_write.h"
#include "testutil.h"

/* A chunk of lists with its own storage. */
typedef struct lists {
    uint32_t n, num_docs;
    uint64_t *start;
    uint32_t *docs, *freqs;
    float *weight, *norm;
    uint64_t cap;
} lists;

static void lists_free(lists *l)
{
    free(l->start), free(l->docs), free(l->freqs), free(l->weight), free(l->norm);
    memset(l, 0, sizeof *l);
}

/* A gap of the kind `kind` picks: dense (0), small, geometric-ish, or wide up to 2^31. */
static uint32_t gap_of(uint64_t *rs, unsigned kind)
{
    uint64_t r = tu_rand(rs);
    switch (kind) {
    case 0: return 0;
    case 1: return (uint32_t)(r % 4);
    case 2: return (r >> 8) % 50 == 0 ? (uint32_t)(r % 100000) : (uint32_t)(r % 40); /* exceptions */
    default: return (uint32_t)(r % (1u << (r >> 59 & 31)));                           /* any width */
    }
}

/* n random lists over docIDs below max_doc (some empty, some of exactly one block, or one more,
 * some long), norms for max_doc documents when with_norm. */
static void make_lists(lists *l, uint64_t seed, uint32_t n, uint32_t B, uint32_t max_doc, int with_norm)
{
    uint64_t rs = seed;
    memset(l, 0, sizeof *l);
    l->n = n;
    l->num_docs = max_doc;
    l->start = calloc((size_t)n + 1, sizeof *l->start);
    l->weight = calloc((size_t)n + 1, sizeof *l->weight);
    l->cap = 1024;
    l->docs = malloc(l->cap * 4);
    l->freqs = malloc(l->cap * 4);
    ck_assert(l->start && l->weight && l->docs && l->freqs);
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        l->start[i] = at;
        uint64_t r = tu_rand(&rs);
        uint32_t df = (uint32_t[]){0, 1, 2, B - 1, B, B + 1, 3 * B + 7, (uint32_t)(r % 2000)}[r % 8];
        unsigned kind = (unsigned)(r >> 32) % 4, fkind = (unsigned)(r >> 40) % 4;
        l->weight[i] = (float)(r >> 11) * 0x1p-50f + 0.01f;
        uint64_t d = tu_rand(&rs) % 100;
        for (uint32_t j = 0; j < df; j++) {
            if (j) d += (uint64_t)gap_of(&rs, kind) + 1;
            if (d >= max_doc) break;
            if (at == l->cap) {
                l->cap *= 2;
                l->docs = realloc(l->docs, l->cap * 4);
                l->freqs = realloc(l->freqs, l->cap * 4);
                ck_assert(l->docs && l->freqs);
            }
            l->docs[at] = (uint32_t)d;
            uint32_t f = gap_of(&rs, fkind) + 1;
            l->freqs[at++] = f ? f : 1;
        }
    }
    l->start[n] = at;
    if (with_norm) {
        l->norm = malloc(((size_t)max_doc + 1) * sizeof *l->norm);
        ck_assert(l->norm);
        for (uint32_t d = 0; d < max_doc; d++)
            l->norm[d] = bm25_norm(IDX_SCORE_K1, IDX_SCORE_B, (uint32_t)(tu_rand(&rs) % 3000) + 1, 250.0);
    }
}

static uint64_t blocks_of(const lists *l, uint32_t a, uint32_t z, uint32_t B)
{
    uint64_t nb = 0;
    for (uint32_t i = a; i < z; i++) nb += (l->start[i + 1] - l->start[i] + B - 1) / B;
    return nb;
}

static idx_chunk chunk_of(const lists *l, uint32_t a, uint32_t z)
{
    uint64_t off = l->start[a];
    return (idx_chunk){.num_lists = z - a, .list_start = l->start + a, .docs = l->docs + off,
                       .freqs = l->freqs + off, .weight = l->weight + a};
}

/* The host's and the device's encodings of l, cut into `parts` chunks appended one after
 * another behind a few words already there, with batches of at most `batch` blocks (0: the
 * encoder's own), must be equal bit for bit. */
static void compare(idx_encoder *e, const cls_build_opts *o, const lists *l, cls_scoring scoring, unsigned parts,
                    uint32_t batch, const char *what)
{
    const uint32_t B = o->block_size;
    uint64_t nb = blocks_of(l, 0, l->n, B);
    idx_block *hb = calloc(nb + 1, sizeof *hb), *db = calloc(nb + 1, sizeof *db);
    uint64_t maxdf = 1;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->start[i + 1] - l->start[i] > maxdf) maxdf = l->start[i + 1] - l->start[i];
    uint32_t *vals = malloc(maxdf * 4); /* idx_encode_chunk: room for the longest list */
    ck_assert(hb && db && vals);
    idx_words hw = {0}, dw = {0};
    /* words already written: offsets count from the words' start */
    for (int i = 0; i < 2; i++) {
        idx_words *w = i ? &dw : &hw;
        ck_assert(w->w = malloc(64 * 4));
        w->cap = 64;
        w->n = 5;
        memset(w->w, 0, 5 * 4);
    }
    if (l->norm) ck_assert_msg(idx_encoder_norms(e, l->norm, l->num_docs) == CLS_OK, "%s", cls_last_error());
    if (batch) e->batch_blocks = batch;
    uint64_t at = 0;
    for (unsigned p = 0; p < parts; p++) {
        uint32_t a = (uint32_t)((uint64_t)l->n * p / parts), z = (uint32_t)((uint64_t)l->n * (p + 1) / parts);
        idx_chunk c = chunk_of(l, a, z);
        ck_assert_msg(idx_encode_chunk(o, &c, scoring, l->norm, vals, hb + at, &hw) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(idx_encode_chunk_dev(e, o, &c, scoring, l->norm, db + at, &dw) == CLS_OK, "%s: %s", what,
                      cls_last_error());
        at += blocks_of(l, a, z, B);
    }
    for (uint64_t b = 0; b < nb; b++)
        ck_assert_msg(memcmp(&hb[b], &db[b], sizeof hb[b]) == 0,
                      "%s: block %llu: host {%u %u %u %#x %#x %#x %a} device {%u %u %u %#x %#x %#x %a}", what,
                      (unsigned long long)b, hb[b].first, hb[b].last, hb[b].offset, hb[b].info, hb[b].dparam,
                      hb[b].fparam, hb[b].max_score, db[b].first, db[b].last, db[b].offset, db[b].info, db[b].dparam,
                      db[b].fparam, db[b].max_score);
    ck_assert_msg(hw.n == dw.n, "%s: %llu words on the host, %llu on the device", what, (unsigned long long)hw.n,
                  (unsigned long long)dw.n);
    for (uint64_t i = 0; i < hw.n; i++)
        ck_assert_msg(hw.w[i] == dw.w[i], "%s: word %llu: host %#x device %#x", what, (unsigned long long)i, hw.w[i],
                      dw.w[i]);
    free(hb), free(db), free(vals), free(hw.w), free(dw.w);
}

/* The layouts: every codec at every block size, pfor also at depths 0, 2 and 3. */
static unsigned layouts(cls_build_opts *out)
{
    static const uint32_t sizes[] = {64, 128, 256, 512};
    unsigned n = 0;
    for (unsigned c = 0; c < CLS_NUM_CODECS; c++)
        for (unsigned k = 0; k < 4 + (cdc_get((cls_codec)c)->uses_depth ? 3 : 0); k++) {
            cls_build_defaults(&out[n]);
            out[n].codec = (cls_codec)c;
            out[n].block_size = k < 4 ? sizes[k] : 128;
            out[n].pfor_depth = k < 4 ? 1 : k == 4 ? 0 : k - 3;
            n++;
        }
    return n;
}

START_TEST(every_codec_random)
{
    cls_build_opts lay[32];
    unsigned n = layouts(lay);
    for (unsigned i = 0; i < n; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s, block %u, depth %u", cls_codec_name(lay[i].codec), lay[i].block_size,
                 lay[i].pfor_depth);
        idx_encoder e;
        ck_assert_msg(idx_encoder_open(&e, tu_device(), &lay[i], CLS_SCORING_BM25) == CLS_OK, "%s: %s", what,
                      cls_last_error());
        lists l;
        /* BM25 block maxima over 300000 documents; chunks of several lists; batches of 7 blocks */
        make_lists(&l, 0x5eed + i, 120, lay[i].block_size, 300000, 1);
        compare(&e, &lay[i], &l, CLS_SCORING_BM25, 3, 7, what);
        compare(&e, &lay[i], &l, CLS_SCORING_BM25, 1, 0, what);
        lists_free(&l);
        /* docIDs across the whole 32-bit range (gaps of every width), no norms */
        make_lists(&l, 0xface + i, 60, lay[i].block_size, UINT32_MAX, 0);
        compare(&e, &lay[i], &l, CLS_SCORING_BM25, 2, 0, what);
        lists_free(&l);
        idx_encoder_close(&e);
    }
}
END_TEST

START_TEST(impact_scoring)
{
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = CLS_CODEC_OPTPFD;
    idx_encoder e;
    ck_assert_msg(idx_encoder_open(&e, tu_device(), &o, CLS_SCORING_IMPACT) == CLS_OK, "%s", cls_last_error());
    lists l;
    make_lists(&l, 77, 80, o.block_size, 100000, 1);
    for (uint32_t i = 0; i < l.n; i++) l.weight[i] = bm25_block_weight(CLS_SCORING_IMPACT, l.num_docs, 1);
    compare(&e, &o, &l, CLS_SCORING_IMPACT, 2, 0, "impact");
    /* a layout or scoring other than the encoder's is refused */
    idx_chunk c = chunk_of(&l, 0, 1);
    idx_block b[8];
    idx_words w = {0};
    ck_assert(idx_encode_chunk_dev(&e, &o, &c, CLS_SCORING_BM25, NULL, b, &w) == CLS_E_ARG);
    o.block_size = 256;
    ck_assert(idx_encode_chunk_dev(&e, &o, &c, CLS_SCORING_IMPACT, NULL, b, &w) == CLS_E_ARG);
    float other = 1.0f;
    o.block_size = 128;
    ck_assert(idx_encode_chunk_dev(&e, &o, &c, CLS_SCORING_IMPACT, &other, b, &w) == CLS_E_ARG);
    free(w.w);
    lists_free(&l);
    idx_encoder_close(&e);
    /* no device: a clear error, nothing opened */
    ck_assert(idx_encoder_open(&e, "ref", &o, CLS_SCORING_BM25) == CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "OpenCL device"), "%s", cls_last_error());
    ck_assert(idx_encoder_open(&e, "9:9", &o, CLS_SCORING_BM25) != CLS_OK);
    /* and a builder refuses such a device when it is configured, before any document is read */
    cls_builder *bd;
    ck_assert_int_eq(cls_builder_create(NULL, &bd), CLS_OK);
    cls_build_opts bo;
    cls_build_defaults(&bo);
    bo.device = "ref";
    ck_assert(cls_builder_configure(bd, &bo) == CLS_E_ARG);
    bo.device = "9:9";
    ck_assert(cls_builder_configure(bd, &bo) != CLS_OK);
    bo.device = tu_device();
    ck_assert_msg(cls_builder_configure(bd, &bo) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(bd);
}
END_TEST

/* A small JSONL collection: documents of a few words from a vocabulary with a long tail, so that
 * lists run from one posting to several blocks. */
static void write_collection(const char *path, unsigned docs)
{
    FILE *f = fopen(path, "w");
    ck_assert(f);
    uint64_t rs = 99;
    for (unsigned d = 0; d < docs; d++) {
        fprintf(f, "{\"id\": \"d%u\", \"contents\": \"", d);
        unsigned words = 5 + (unsigned)(tu_rand(&rs) % 60);
        for (unsigned w = 0; w < words; w++) {
            uint64_t r = tu_rand(&rs);
            unsigned t = (unsigned)(r % 7 == 0 ? r % 5000 : r % 40); /* a few common terms, a long tail */
            fprintf(f, "%sw%ux", w ? " " : "", t);
        }
        fprintf(f, "\"}\n");
    }
    ck_assert(fclose(f) == 0);
}

/* `clsearch index -d DEVICE` against the host's build of the same input, for every codec: cmp. */
static void cli_identical(const char *input, const char *fmt, const char *extra)
{
    for (unsigned c = 0; c < CLS_NUM_CODECS; c++) {
        const char *codec = cls_codec_name((cls_codec)c);
        char *host = tu_strdup(tu_tmp_path("host.idx")), *dev = tu_strdup(tu_tmp_path("dev.idx"));
        const char *err;
        ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -q -c %s --codec %s %s -o '%s' '%s'", fmt, codec, extra,
                             host, input) == 0, "%s", err);
        ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -v -c %s --codec %s %s -d '%s' -o '%s' '%s'", fmt, codec,
                             extra, tu_device(), dev, input) == 0, "%s", err);
        ck_assert_msg(strstr(err, "on device"), "-v names the device: %s", err);
        size_t hn, dn;
        unsigned char *h = tu_read_file(host, &hn), *d = tu_read_file(dev, &dn);
        ck_assert_msg(hn == dn && memcmp(h, d, hn) == 0, "%s %s: the device's file differs from the host's", codec,
                      extra);
        fprintf(stderr, "index -d %s --codec %s %s: %zu bytes, identical to the host's\n", tu_device(), codec, extra,
                hn);
        free(h), free(d);
        remove(host), remove(dev);
        free(host), free(dev);
    }
}

START_TEST(command_identical)
{
    char *input = tu_strdup(tu_tmp_path("coll.jsonl"));
    write_collection(input, 3000);
    cli_identical(input, "jsonl", "--block 64");
    cli_identical(input, "jsonl", "--block 512 --pfor-depth 3");
    /* a device that is none: a message, non-zero, and no file */
    char *out = tu_strdup(tu_tmp_path("none.idx"));
    const char *err;
    ck_assert(tu_cli(NULL, "/dev/null", &err, "index -q -c jsonl -d ref -o '%s' '%s'", out, input) != 0);
    ck_assert_msg(strstr(err, "OpenCL device"), "%s", err);
    ck_assert(!tu_exists(out));
    ck_assert(tu_cli(NULL, "/dev/null", &err, "index -q -c jsonl -d 7:7 -o '%s' '%s'", out, input) != 0);
    ck_assert(!tu_exists(out));
    remove(input);
    free(input), free(out);
}
END_TEST

/* CACM's real lists: built by the command on the host and on the device, every codec, cmp; then
 * every list of the host's index decoded and encoded again both ways at every layout. */
START_TEST(cacm)
{
    const char *input = tu_data_path("cacm/cacm.tar.gz");
    cli_identical(input, "html", "");
    char *path = tu_strdup(tu_tmp_path("cacm.idx"));
    const char *err;
    ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -q -c html -o '%s' '%s'", path, input) == 0, "%s", err);
    cls_index *x;
    ck_assert_msg(cls_index_open(path, &x) == CLS_OK, "%s", cls_last_error());
    lists l;
    memset(&l, 0, sizeof l);
    l.n = x->num_terms;
    l.num_docs = x->num_docs;
    l.start = calloc((size_t)l.n + 1, sizeof *l.start);
    l.weight = calloc((size_t)l.n + 1, sizeof *l.weight);
    l.norm = malloc(((size_t)l.num_docs + 1) * sizeof *l.norm);
    uint64_t P = 0;
    for (uint32_t t = 0; t < l.n; t++) P += x->terms[t].df;
    l.docs = malloc((P + IDX_MAX_BLOCK) * 4);
    l.freqs = malloc((P + IDX_MAX_BLOCK) * 4);
    ck_assert(l.start && l.weight && l.norm && l.docs && l.freqs);
    for (uint32_t t = 0, df; t < l.n; t++) {
        ck_assert(idx_decode_list(x, t, l.docs + l.start[t], l.freqs + l.start[t], &df) == CLS_OK);
        l.start[t + 1] = l.start[t] + df;
        l.weight[t] = bm25_block_weight(x->scoring, x->num_docs, df);
    }
    for (uint32_t d = 0; d < l.num_docs; d++)
        l.norm[d] = bm25_norm(IDX_SCORE_K1, IDX_SCORE_B, x->doclen[d], x->avg_doc_len);
    cls_build_opts lay[32];
    unsigned n = layouts(lay);
    for (unsigned i = 0; i < n; i++) {
        char what[128];
        snprintf(what, sizeof what, "CACM, %s, block %u, depth %u", cls_codec_name(lay[i].codec), lay[i].block_size,
                 lay[i].pfor_depth);
        idx_encoder e;
        ck_assert_msg(idx_encoder_open(&e, tu_device(), &lay[i], x->scoring) == CLS_OK, "%s", cls_last_error());
        compare(&e, &lay[i], &l, x->scoring, 2, 0, what);
        idx_encoder_close(&e);
    }
    fprintf(stderr, "CACM: %u lists, %llu postings, %u layouts: the device's blocks and words equal the host's\n", l.n,
            (unsigned long long)P, n);
    lists_free(&l);
    cls_index_close(x);
    remove(path);
    free(path);
}
END_TEST

static Suite *plain(void)
{
    Suite *s = suite_create("encode_dev");
    TCase *tc = tcase_create("encode_dev");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, every_codec_random);
    tcase_add_test(tc, impact_scoring);
    tcase_add_test(tc, command_identical);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data(void)
{
    Suite *s = suite_create("encode_dev_data");
    TCase *tc = tcase_create("cacm");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, cacm);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", NULL};
    return tu_main(argc, argv, plain, data, needs);
}
