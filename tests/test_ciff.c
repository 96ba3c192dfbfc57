/* CIFF import and export (cls_ciff_import, cls_ciff_export): a round trip through CIFF keeps
 * every posting, document length and docno in every codec and block size, and re-exporting
 * gives the same bytes; the bytes are CIFF's wire format (checked against an encoder written
 * here from the format's description, not the generated code); a malformed, truncated or
 * foreign file is CLS_E_FORMAT with a message naming what is wrong, and leaves no index and no
 * temporary file behind. Built with CLSEARCH_CIFF=OFF, both CTest entries report a skip. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "device/clx.h"
#include "index/index.h"
#include "algo/or.h"
#include "engine/engine.h"
#include "util/vec.h"
#include "testutil.h"

/* Analysis without stemming or stopwords: the test controls the terms exactly. */
static const cls_analyzer_opts EXACT = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};

/* ---- helpers ------------------------------------------------------------------------------ */



static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Whether the folder of path holds anything whose name starts with path's base name (the
 * file itself, or a "<name>.tmp.XXXXXX" left behind). */
static int leftovers(const char *path)
{
    char *dir = tu_strdup(path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash) *slash = '\0';
    DIR *d = opendir(slash ? dir : ".");
    ck_assert(d != NULL);
    int found = 0;
    size_t bl = strlen(base);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, base, bl) == 0) found = 1;
    closedir(d);
    free(dir);
    return found;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    ck_assert_msg(la > 0, "%s is empty: the comparison would prove nothing", a);
    int same = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Whether the library has CIFF support; main() asks once, and without it both parts exit
 * TU_SKIP (a skip CTest shows), rather than every case passing with nothing checked. */
static int ciff_built(void)
{
    cls_status s = cls_ciff_import("/nonexistent/x.ciff", NULL, NULL, "/nonexistent/x.idx");
    return !(s == CLS_E_ARG && strstr(cls_last_error(), "CLSEARCH_CIFF=OFF"));
}

/* Every posting list, decoded whole: docs and freqs of term t at [start[t], start[t+1]). */
typedef struct dlists {
    uint64_t *start;
    uint32_t *docs, *freqs;
} dlists;

static void decode_all(const cls_index *idx, dlists *l)
{
    l->start = malloc(((size_t)idx->num_terms + 1) * sizeof *l->start);
    l->docs = malloc((size_t)idx->num_postings * 4 + 4);
    l->freqs = malloc((size_t)idx->num_postings * 4 + 4);
    ck_assert(l->start && l->docs && l->freqs);
    uint64_t at = 0;
    for (uint32_t t = 0; t < idx->num_terms; t++) {
        l->start[t] = at;
        const idx_term *e = &idx->terms[t];
        for (uint32_t j = 0; j < e->num_blocks; j++) {
            uint64_t b = (uint64_t)e->first_block + j;
            ck_assert_msg(idx_decode_block(idx, b, l->docs + at, l->freqs + at) == CLS_OK, "%s", cls_last_error());
            at += idx_info_count(idx->blocks[b].info);
        }
        ck_assert_uint_eq(at - l->start[t], e->df);
    }
    l->start[idx->num_terms] = at;
    ck_assert_uint_eq(at, idx->num_postings);
}

static void lists_free(dlists *l)
{
    free(l->start);
    free(l->docs);
    free(l->freqs);
}

/* a and b hold the same collection: documents, terms and every posting (any codec and block). */
static void same_index(const cls_index *a, const cls_index *b, const char *what)
{
    ck_assert_msg(a->num_docs == b->num_docs && a->num_terms == b->num_terms && a->num_postings == b->num_postings &&
                      a->num_tokens == b->num_tokens && a->analyzer == b->analyzer,
                  "%s: counts differ: docs %u/%u terms %u/%u postings %llu/%llu tokens %llu/%llu analyzer %u/%u", what,
                  a->num_docs, b->num_docs, a->num_terms, b->num_terms, (unsigned long long)a->num_postings,
                  (unsigned long long)b->num_postings, (unsigned long long)a->num_tokens,
                  (unsigned long long)b->num_tokens, a->analyzer, b->analyzer);
    ck_assert(a->avg_doc_len == b->avg_doc_len);
    for (uint32_t d = 0; d < a->num_docs; d++) {
        ck_assert_msg(strcmp(cls_index_docno(a, d), cls_index_docno(b, d)) == 0, "%s: doc %u: docno '%s' vs '%s'",
                      what, d, cls_index_docno(a, d), cls_index_docno(b, d));
        ck_assert_msg(a->doclen[d] == b->doclen[d], "%s: doc %u: length %u vs %u", what, d, a->doclen[d], b->doclen[d]);
    }
    dlists la, lb;
    decode_all(a, &la);
    decode_all(b, &lb);
    for (uint32_t t = 0; t < a->num_terms; t++) {
        uint64_t n = a->term_off[t + 1] - a->term_off[t];
        ck_assert_msg(n == b->term_off[t + 1] - b->term_off[t] &&
                          memcmp(a->term_blob + a->term_off[t], b->term_blob + b->term_off[t], (size_t)n) == 0,
                      "%s: term %u differs", what, t);
        ck_assert_msg(a->terms[t].df == b->terms[t].df, "%s: term %u: df %u vs %u", what, t, a->terms[t].df,
                      b->terms[t].df);
    }
    ck_assert(memcmp(la.start, lb.start, ((size_t)a->num_terms + 1) * 8) == 0);
    for (uint64_t i = 0; i < a->num_postings; i++)
        ck_assert_msg(la.docs[i] == lb.docs[i] && la.freqs[i] == lb.freqs[i],
                      "%s: posting %llu: (%u, tf %u) vs (%u, tf %u)", what, (unsigned long long)i, la.docs[i],
                      la.freqs[i], lb.docs[i], lb.freqs[i]);
    lists_free(&la);
    lists_free(&lb);
}

static cls_index *open_ok(const char *path)
{
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s: %s", path, cls_last_error());
    return idx;
}

static void export_ok(const cls_index *idx, const char *path, const char *desc)
{
    ck_assert_msg(cls_ciff_export(idx, path, desc) == CLS_OK, "export to %s: %s", path, cls_last_error());
}

/* ---- a CIFF encoder written from the format's description ---------------------------------- */

/* Protobuf, proto3 rules: scalars equal to zero and empty strings are not written; int32 and
 * int64 as varints (a negative one sign-extended to 10 bytes), double as 8 little-endian bytes. */
typedef struct pb {
    unsigned char *p;
    size_t n, cap;
} pb;

static void pb_raw(pb *b, const void *s, size_t n)
{
    ck_assert(vec_reserve(&b->p, &b->cap, b->n + n, 1));
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    do {
        unsigned char c = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        pb_raw(b, &c, 1);
        v >>= 7;
    } while (v);
}

static void pb_int(pb *b, unsigned field, int64_t v)
{
    if (v == 0) return;
    pb_varint(b, field << 3);
    pb_varint(b, (uint64_t)v);
}

static void pb_str(pb *b, unsigned field, const void *s, size_t n)
{
    if (n == 0) return;
    pb_varint(b, field << 3 | 2);
    pb_varint(b, n);
    pb_raw(b, s, n);
}

static void pb_double(pb *b, unsigned field, double d)
{
    if (d == 0) return;
    pb_varint(b, field << 3 | 1);
    uint64_t u;
    memcpy(&u, &d, 8);
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(u >> (8 * i));
    pb_raw(b, le, 8);
}

/* Appends msg to file as a length-delimited message and empties msg. */
static void pb_delimited(pb *file, pb *msg)
{
    pb_varint(file, msg->n);
    pb_raw(file, msg->p, msg->n);
    msg->n = 0;
}

static void put_header(pb *f, int32_t version, int32_t lists, int32_t docs, int32_t tlists, int32_t tdocs,
                       int64_t terms, double avg, const char *desc)
{
    pb m = {0};
    pb_int(&m, 1, version);
    pb_int(&m, 2, lists);
    pb_int(&m, 3, docs);
    pb_int(&m, 4, tlists);
    pb_int(&m, 5, tdocs);
    pb_int(&m, 6, terms);
    pb_double(&m, 7, avg);
    pb_str(&m, 8, desc, strlen(desc));
    pb_delimited(f, &m);
    free(m.p);
}

typedef struct tpost {
    int32_t docid, tf; /* docid: the first posting's docid, then gaps */
} tpost;

static void put_list(pb *f, const char *term, size_t tlen, int64_t df, int64_t cf, const tpost *p, size_t n)
{
    pb m = {0}, sub = {0};
    pb_str(&m, 1, term, tlen);
    pb_int(&m, 2, df);
    pb_int(&m, 3, cf);
    for (size_t i = 0; i < n; i++) {
        pb_int(&sub, 1, p[i].docid);
        pb_int(&sub, 2, p[i].tf);
        pb_varint(&m, 4 << 3 | 2);
        pb_delimited(&m, &sub);
    }
    pb_delimited(f, &m);
    free(m.p);
    free(sub.p);
}

static void put_doc(pb *f, int32_t docid, const char *no, size_t nlen, int32_t len)
{
    pb m = {0};
    pb_int(&m, 1, docid);
    pb_str(&m, 2, no, nlen);
    pb_int(&m, 3, len);
    pb_delimited(f, &m);
    free(m.p);
}

/* ---- impact-scored CIFF (learned sparse retrieval) ----------------------------------------- */

#define IMP_DOCS 1500u
#define IMP_TERMS 6u

/* A CIFF file of IMP_DOCS documents over terms t0..t5 whose tf fields are quantized impacts
 * (1..255, as SPLADE's quantized weights): t0 in every document (a list of many blocks: one-term
 * AND queries prune), the others in fewer; imp[t][d] holds each impact, 0 where absent. */
static void impact_ciff(const char *path, uint8_t imp[IMP_TERMS][IMP_DOCS])
{
    uint64_t st = 99;
    uint32_t doclen[IMP_DOCS] = {0};
    for (uint32_t t = 0; t < IMP_TERMS; t++)
        for (uint32_t d = 0; d < IMP_DOCS; d++) {
            int in = t == 0 || tu_rand(&st) % (t + 1) == 0;
            imp[t][d] = in ? (uint8_t)(1 + tu_rand(&st) % 255) : 0;
            doclen[d] += in;
        }
    imp[1][7] = imp[1][8] = 200; /* equal scores: the docID tie-break */
    imp[0][7] = imp[0][8] = 3;
    pb f = {0};
    uint64_t total = 0;
    for (uint32_t d = 0; d < IMP_DOCS; d++) total += doclen[d];
    put_header(&f, 1, IMP_TERMS, IMP_DOCS, IMP_TERMS, IMP_DOCS, (int64_t)total, (double)total / IMP_DOCS, "impacts");
    tpost *p = malloc(IMP_DOCS * sizeof *p);
    for (uint32_t t = 0; t < IMP_TERMS; t++) {
        size_t n = 0;
        int64_t cf = 0;
        for (uint32_t d = 0, prev = 0; d < IMP_DOCS; d++)
            if (imp[t][d]) {
                p[n] = (tpost){(int32_t)(n ? d - prev : d), imp[t][d]};
                n++;
                cf += imp[t][d];
                prev = d;
            }
        char term[8];
        snprintf(term, sizeof term, "t%u", t);
        put_list(&f, term, strlen(term), (int64_t)n, cf, p, n);
    }
    for (uint32_t d = 0; d < IMP_DOCS; d++) {
        char no[16];
        snprintf(no, sizeof no, "d%u", d);
        put_doc(&f, (int32_t)d, no, strlen(no), (int32_t)doclen[d]);
    }
    tu_write_file(path, f.p, f.n);
    free(p);
    free(f.p);
}

/* tu_tmp_path's name kept in buf (tu_tmp_path reuses its buffers, and each call names a new file). */
static const char *keep_path(char *buf, const char *name)
{
    snprintf(buf, 4096, "%s", tu_tmp_path(name));
    return buf;
}

static const char *test_device(void)
{
    const char *d = getenv("CLS_TEST_DEVICE");
    return d && *d ? d : "cpu";
}

static cls_results *run_search(cls_engine *e, const cls_batch *b, cls_mode mode, uint32_t k, float k1, float bb)
{
    cls_search_params sp;
    cls_search_defaults(&sp);
    sp.k = k, sp.mode = mode, sp.k1 = k1, sp.b = bb;
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    ck_assert_msg(cls_engine_search(e, b, &sp, r) == CLS_OK, "%s", cls_last_error());
    return r;
}

static uint64_t engine_counter(const cls_engine *e, const char *name)
{
    const cls_counter *c;
    size_t n = cls_engine_counters(e, &c);
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return c[i].value;
    ck_abort_msg("no counter %s", name);
    return 0;
}

/* The queries of the impact cases: weights, repeats, one-term queries (pruned in AND). The
 * distinct terms of each, in order of first appearance, with their summed weights. */
static const struct {
    const char *text;
    uint32_t n, term[3];
    float w[3];
} IMP_Q[] = {
    {"t1", 1, {1}, {1}},
    {"t0", 1, {0}, {1}},
    {"t0^2.5", 1, {0}, {2.5f}},
    {"t2^0.5 t3", 2, {2, 3}, {0.5f, 1}},
    {"t1 t4^3 t1^0.25", 2, {1, 4}, {1.25f, 3}},
    {"t5^1.5 t0 t2^7", 3, {5, 0, 2}, {1.5f, 1, 7}},
    {"t3 nosuch^2", 1, {3}, {1}},
};
#define IMP_NQ (sizeof IMP_Q / sizeof *IMP_Q)

static cls_batch *impact_batch(const cls_index *idx)
{
    cls_batch *bt;
    ck_assert_int_eq(cls_batch_create(idx, &bt), CLS_OK);
    for (size_t q = 0; q < IMP_NQ; q++) {
        char qid[8];
        snprintf(qid, sizeof qid, "q%zu", q);
        ck_assert_int_eq(cls_batch_add(bt, qid, IMP_Q[q].text), CLS_OK);
    }
    return bt;
}

/* An impact-scored CIFF file imported with CLS_SCORING_IMPACT: the header says so; check
 * passes (each block's max_score is its largest impact); the reference engine's scores are the
 * hand-computed sums of weight x impact, whatever k1 and b; the device equals the reference in
 * every mode, pruning one-term AND queries at any k1 and b; the kind survives recode; export
 * and re-import with the option give the same index. */
START_TEST(impact_scored)
{
    static uint8_t imp[IMP_TERMS][IMP_DOCS];
    static char pb_[9][4096];
    const char *ciff = keep_path(pb_[0], "impact.ciff"), *path = keep_path(pb_[1], "impact.idx");
    impact_ciff(ciff, imp);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.block_size = 64;
    ck_assert_msg(cls_ciff_import_scored(ciff, &EXACT, &o, CLS_SCORING_IMPACT, path) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_ciff_import_scored(ciff, &EXACT, &o, (cls_scoring)7, keep_path(pb_[2], "x.idx")), CLS_E_ARG);
    ck_assert(!exists(pb_[2]));
    cls_index *idx = open_ok(path);
    ck_assert_int_eq(cls_index_scoring(idx), CLS_SCORING_IMPACT);
    ck_assert_str_eq(cls_scoring_name(cls_index_scoring(idx)), "impact");
    ck_assert_msg(cls_index_check(idx, 2) == CLS_OK, "%s", cls_last_error());
    for (uint64_t b = 0; b < idx->num_blocks; b++) { /* max_score: the block's largest impact */
        uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK], best = 0;
        ck_assert_int_eq(idx_decode_block(idx, b, docs, freqs), CLS_OK);
        for (uint32_t i = 0; i < idx_info_count(idx->blocks[b].info); i++) best = freqs[i] > best ? freqs[i] : best;
        ck_assert_float_eq(idx->blocks[b].max_score, (float)best);
    }
    int rc;
    const char *err;
    const char *cout = keep_path(pb_[2], "cli.out");
    rc = tu_cli(NULL, cout, &err, "check '%s'", path);
    ck_assert_msg(rc == 0, "clsearch check: exit %d: %s", rc, err);
    rc = tu_cli(NULL, cout, &err, "stats '%s'", path);
    char *text = (char *)tu_read_file(cout, NULL);
    ck_assert_msg(rc == 0 && strstr(text, "scoring          impact"), "clsearch stats: exit %d: %s%s", rc, err, text);
    free(text);

    cls_batch *bt = impact_batch(idx);
    cls_engine *ref, *dev;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    ck_assert_msg(cls_engine_create(idx, test_device(), &dev) == CLS_OK, "%s", cls_last_error());
    cls_engine *host;
    ck_assert_msg(cls_engine_create(idx, "host:2", &host) == CLS_OK, "%s", cls_last_error());

    /* (a) the reference engine: every matching document, scored sum of weight x impact in query
     * order (float, from 0), at the default k1 and b and at others (they play no part) */
    const float kb[][2] = {{0.9f, 0.4f}, {1.2f, 0.75f}};
    for (size_t p = 0; p < 2; p++) {
        cls_results *r = run_search(ref, bt, CLS_MODE_OR, IMP_DOCS, kb[p][0], kb[p][1]);
        for (size_t q = 0; q < IMP_NQ; q++) {
            size_t n, want = 0;
            const uint32_t *docs;
            const float *scores;
            cls_results_get(r, q, &n, &docs, &scores);
            for (uint32_t d = 0; d < IMP_DOCS; d++) {
                int any = 0;
                for (uint32_t i = 0; i < IMP_Q[q].n; i++) any |= imp[IMP_Q[q].term[i]][d] != 0;
                want += (size_t)any;
            }
            ck_assert_msg(n == want && n > 0, "'%s': %zu hits, %zu documents match", IMP_Q[q].text, n, want);
            for (size_t j = 0; j < n; j++) {
                float s = 0.0f;
                for (uint32_t i = 0; i < IMP_Q[q].n; i++) {
                    uint8_t v = imp[IMP_Q[q].term[i]][docs[j]];
                    if (v) s += IMP_Q[q].w[i] * (float)v;
                }
                ck_assert_msg(memcmp(&s, &scores[j], sizeof s) == 0, "'%s' d%u: score %.9g, by hand %.9g", IMP_Q[q].text,
                              docs[j], scores[j], s);
                if (j) ck_assert(scores[j - 1] > scores[j] || (scores[j - 1] == scores[j] && docs[j - 1] < docs[j]));
            }
        }
        cls_results_free(r);
    }

    /* (b) the device equals the reference in every mode and at any k1 and b; one-term AND
     * queries prune at other k1 and b too (an impact's bound does not depend on them) */
    const uint32_t ks[] = {1, 5, 10, 100, IMP_DOCS};
    for (int m = 0; m < CLS_NUM_MODES; m++)
        for (size_t p = 0; p < 2; p++)
            for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
                cls_results *rr = run_search(ref, bt, (cls_mode)m, ks[i], kb[p][0], kb[p][1]);
                cls_results *rd = run_search(dev, bt, (cls_mode)m, ks[i], kb[p][0], kb[p][1]);
                ck_assert_msg(cls_results_compare(rr, rd, 0.0) == CLS_OK, "%s k %u k1 %g: %s", cls_mode_name((cls_mode)m),
                              ks[i], kb[p][0], cls_last_error());
                if (m == CLS_MODE_AND && ks[i] <= 10)
                    ck_assert_msg(engine_counter(dev, "queries_pruned") >= 2, "k %u k1 %g: no query pruned", ks[i],
                                  kb[p][0]);
                /* the host executor too, its bounds the largest impacts at any k1 and b */
                cls_results *rh = run_search(host, bt, (cls_mode)m, ks[i], kb[p][0], kb[p][1]);
                ck_assert_msg(cls_results_compare(rr, rh, 0.0) == CLS_OK, "host: %s k %u k1 %g: %s",
                              cls_mode_name((cls_mode)m), ks[i], kb[p][0], cls_last_error());
                cls_results_free(rh);
                cls_results_free(rr);
                cls_results_free(rd);
            }
    /* (c) OR by partitions (forced: the collection is small) bounds blocks by their largest impact
     * at any k1 and b, and equals the reference */
    or_force_partitions(clx_algo_state(engine_clx(dev), CLS_MODE_OR), 1);
    for (size_t p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
            cls_results *rr = run_search(ref, bt, CLS_MODE_OR, ks[i], kb[p][0], kb[p][1]);
            cls_results *rd = run_search(dev, bt, CLS_MODE_OR, ks[i], kb[p][0], kb[p][1]);
            ck_assert_msg(cls_results_compare(rr, rd, 0.0) == CLS_OK, "or by partitions k %u k1 %g: %s", ks[i],
                          kb[p][0], cls_last_error());
            ck_assert_uint_eq(engine_counter(dev, "or_bounds_from"), ABI_BOUND_MAXSCORE);
            cls_results_free(rr);
            cls_results_free(rd);
        }
    cls_engine_free(dev);
    cls_engine_free(host);

    /* recode keeps the kind; export, then import with the option, gives the same index (CIFF
     * cannot carry the kind: without the option the postings are the same, scored as BM25) */
    const char *rec = keep_path(pb_[3], "impact-rec.idx"), *out = keep_path(pb_[4], "impact-out.ciff"),
               *back = keep_path(pb_[5], "impact-back.idx"), *bm = keep_path(pb_[6], "impact-bm25.idx");
    cls_build_opts ro = o;
    ro.codec = CLS_CODEC_RICE;
    ck_assert_msg(cls_index_recode(idx, &ro, rec) == CLS_OK, "%s", cls_last_error());
    export_ok(idx, out, "impacts");
    ck_assert_msg(cls_ciff_import_scored(out, &EXACT, &o, CLS_SCORING_IMPACT, back) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_ciff_import(out, &EXACT, &o, bm) == CLS_OK, "%s", cls_last_error());
    /* the same through the command: export says the kind is left behind, import --impact */
    const char *cli_idx = keep_path(pb_[8], "impact-cli.idx");
    rc = tu_cli(NULL, cout, &err, "ciff-export '%s' -o '%s' --force", path, out);
    ck_assert_msg(rc == 0 && strstr(err, "import") && strstr(err, "with --impact"), "ciff-export: exit %d: %s", rc, err);
    rc = tu_cli(NULL, cout, &err, "ciff-import '%s' -o '%s' --impact --block 64 --no-stem --no-stopwords --no-possessive",
                out, cli_idx);
    ck_assert_msg(rc == 0, "ciff-import --impact: exit %d: %s", rc, err);
    const char *const again[] = {rec, back, cli_idx, bm};
    cls_results *want = run_search(ref, bt, CLS_MODE_OR, 100, 0.9f, 0.4f);
    for (size_t i = 0; i < 4; i++) {
        cls_index *y = open_ok(again[i]);
        same_index(idx, y, again[i]);
        ck_assert_int_eq(cls_index_scoring(y), i < 3 ? CLS_SCORING_IMPACT : CLS_SCORING_BM25);
        ck_assert_msg(cls_index_check(y, 2) == CLS_OK, "%s: %s", again[i], cls_last_error());
        cls_engine *e;
        ck_assert_int_eq(cls_engine_create(y, "ref", &e), CLS_OK);
        cls_batch *by = impact_batch(y);
        cls_results *r = run_search(e, by, CLS_MODE_OR, 100, 0.9f, 0.4f);
        ck_assert_msg((cls_results_compare(want, r, 0.0) == CLS_OK) == (i < 3), "%s", again[i]);
        cls_results_free(r);
        cls_batch_free(by);
        cls_engine_free(e);
        cls_index_close(y);
    }
    cls_results_free(want);
    cls_engine_free(ref);
    cls_batch_free(bt);
    cls_index_close(idx);

    /* the header's kind is checked: as BM25 the blocks' max_score no longer match (check says
     * so), and an unknown kind is a damaged header */
    size_t len;
    unsigned char *img = tu_read_file(path, &len);
    const uint32_t kinds[] = {CLS_SCORING_BM25, 2, 0x100};
    for (size_t i = 0; i < 3; i++) {
        idx_header h;
        memcpy(&h, img, sizeof h);
        h.scoring = kinds[i];
        h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
        memcpy(img, &h, sizeof h);
        const char *bad = keep_path(pb_[7], "impact-bad.idx");
        tu_write_file(bad, img, len);
        cls_index *y = NULL;
        cls_status s = cls_index_open(bad, &y);
        if (i == 0) {
            ck_assert_int_eq(s, CLS_OK);
            ck_assert_int_eq(cls_index_check(y, 2), CLS_E_CORRUPT);
            ck_assert_msg(strstr(cls_last_error(), "max_score"), "%s", cls_last_error());
            cls_index_close(y);
        } else {
            ck_assert_int_eq(s, CLS_E_CORRUPT);
            ck_assert_msg(strstr(cls_last_error(), "unknown scoring kind"), "%s", cls_last_error());
        }
        remove(bad);
    }
    free(img);
    const char *const tmp[] = {ciff, path, rec, out, back, bm, cout, cli_idx};
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++) remove(tmp[i]);
}
END_TEST

/* The tiny collection: docs d0 (length 1), d1 (2), d2 (4); apple in d0 (tf 1) and d2 (tf 3),
 * banana in d1 (tf 2). The variants each break one rule. */
enum {
    V_OK, V_SORTED, V_VERSION, V_NEG_COUNT, V_TOTAL_BELOW, V_MORE_LISTS, V_FEWER_LISTS, V_MORE_DOCS, V_FEWER_DOCS,
    V_DF, V_CF, V_NO_POSTINGS, V_GAP0, V_GAPNEG, V_FIRSTNEG, V_TF0, V_TFNEG, V_DOCID_RANGE, V_GAP_RANGE,
    V_EMPTY_TERM, V_DUP_TERM, V_DOC_ORDER, V_DOCNO_SPACE, V_DOCNO_TAB, V_DOCNO_NL, V_DOCNO_NUL, V_DOCNO_EMPTY,
    V_DOCLEN_NEG, V_NOT_PROTOBUF, V_COUNT
};

/* What the message must mention for each variant. */
static const char *const V_WANT[V_COUNT] = {
    [V_VERSION] = "version", [V_NEG_COUNT] = "num_docs", [V_TOTAL_BELOW] = "total_docs",
    [V_MORE_LISTS] = "postings list 2", [V_FEWER_LISTS] = "document record 0", [V_MORE_DOCS] = "truncated",
    [V_FEWER_DOCS] = "after the last document record", [V_DF] = "df", [V_CF] = "cf", [V_NO_POSTINGS] = "no postings",
    [V_GAP0] = "non-increasing", [V_GAPNEG] = "non-increasing", [V_FIRSTNEG] = "negative", [V_TF0] = "tf",
    [V_TFNEG] = "tf", [V_DOCID_RANGE] = "out of range", [V_GAP_RANGE] = "out of range", [V_EMPTY_TERM] = "term",
    [V_DUP_TERM] = "two postings lists", [V_DOC_ORDER] = "docid order", [V_DOCNO_SPACE] = "collection_docid",
    [V_DOCNO_TAB] = "collection_docid", [V_DOCNO_NL] = "collection_docid", [V_DOCNO_NUL] = "collection_docid",
    [V_DOCNO_EMPTY] = "collection_docid", [V_DOCLEN_NEG] = "doclength", [V_NOT_PROTOBUF] = "protobuf",
};

static void tiny(pb *f, int v, const char *desc)
{
    f->n = 0;
    int32_t lists = v == V_MORE_LISTS ? 3 : v == V_FEWER_LISTS ? 1 : v == V_DUP_TERM ? 3 : 2;
    int32_t docs = v == V_MORE_DOCS ? 4 : v == V_NEG_COUNT ? -1 : 3;
    put_header(f, v == V_VERSION ? 2 : 1, lists, docs, lists, v == V_TOTAL_BELOW ? 2 : docs, 7, 7.0 / 3, desc);
    tpost apple[2] = {{0, 1}, {2, 3}}, banana[1] = {{1, 2}};
    int64_t adf = 2, acf = 4;
    switch (v) {
    case V_DF: adf = 3; break;
    case V_CF: acf = 5; break;
    case V_GAP0: apple[1].docid = 0; break;
    case V_GAPNEG: apple[1].docid = -1; break;
    case V_FIRSTNEG: apple[0].docid = -1; break;
    case V_TF0: apple[1].tf = 0, acf = 1; break;
    case V_TFNEG: apple[1].tf = -3, acf = -2; break;
    case V_DOCID_RANGE: banana[0].docid = 3; break;
    case V_GAP_RANGE: apple[1].docid = 3; break;
    }
    const char *bterm = v == V_EMPTY_TERM ? "" : "banana";
    if (v == V_NOT_PROTOBUF) {
        /* field 4 (postings) as length-delimited with a length past the message's end */
        pb m = {0};
        pb_str(&m, 1, "apple", 5);
        unsigned char bad[] = {4 << 3 | 2, 100, 1, 2};
        pb_raw(&m, bad, sizeof bad);
        pb_delimited(f, &m);
        free(m.p);
    } else if (v == V_SORTED) {
        put_list(f, "apple", 5, adf, acf, apple, 2);
    }
    if (v != V_NOT_PROTOBUF) put_list(f, bterm, strlen(bterm), 1, 2, banana, v == V_NO_POSTINGS ? 0 : 1);
    if (v == V_DUP_TERM) put_list(f, "banana", 6, 1, 1, (tpost[]){{2, 1}}, 1);
    if (v != V_SORTED) put_list(f, "apple", 5, adf, acf, apple, 2);
    const char *no[4] = {"d0", "d1", "d2", "d3"};
    size_t nl[4] = {2, 2, 2, 2};
    if (v == V_DOCNO_SPACE) no[1] = "d 1", nl[1] = 3;
    if (v == V_DOCNO_TAB) no[1] = "d\t1", nl[1] = 3;
    if (v == V_DOCNO_NL) no[1] = "d1\n", nl[1] = 3;
    if (v == V_DOCNO_NUL) no[1] = "d1\0x", nl[1] = 4;
    if (v == V_DOCNO_EMPTY) nl[1] = 0;
    int32_t len[4] = {1, 2, 4, 1};
    if (v == V_DOCLEN_NEG) len[2] = -4;
    int ndocs = v == V_FEWER_DOCS ? 4 : 3; /* V_FEWER_DOCS: the header declares fewer than there are */
    for (int d = 0; d < ndocs; d++) put_doc(f, v == V_DOC_ORDER && d == 1 ? 2 : d, no[d], nl[d], len[d]);
}

/* Imports the bytes at a fresh path, expecting failure with status want and a message holding
 * want_text (if not NULL); checks that no index and no temporary file is left. */
static void import_fails(const void *data, size_t len, cls_status want, const char *want_text, const char *what)
{
    char *in = tu_strdup(tu_tmp_path("bad.ciff")), *out = tu_strdup(tu_tmp_path("bad-out.idx"));
    tu_write_file(in, data, len);
    cls_status s = cls_ciff_import(in, &EXACT, NULL, out);
    ck_assert_msg(s == want, "%s: status %d (%s), expected %d; detail: %s", what, (int)s, cls_status_str(s), (int)want,
                  cls_last_error());
    const char *msg = cls_last_error();
    ck_assert_msg(*msg != '\0', "%s: no message", what);
    if (getenv("CLS_TEST_VERBOSE")) fprintf(stderr, "%s: %s\n", what, msg);
    ck_assert_msg(!want_text || strstr(msg, want_text), "%s: message '%s' does not mention '%s'", what, msg, want_text);
    ck_assert_msg(!leftovers(out), "%s: left %s or a temporary file behind", what, out);
    remove(in);
    free(in);
    free(out);
}

/* ---- a random collection -------------------------------------------------------------------- */

#define RND_DOCS 1500u
#define RND_VOCAB 400u

/* Terms of skewed frequency: the commonest reach over 1000 documents (several 512-blocks). */
static char *random_index(uint64_t seed, const cls_build_opts *o)
{
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&EXACT, &b), CLS_OK);
    if (o) ck_assert_int_eq(cls_builder_configure(b, o), CLS_OK);
    uint64_t rs = seed;
    char text[8192], docno[64];
    for (uint32_t d = 0; d < RND_DOCS; d++) {
        size_t len = 0;
        uint32_t n = (uint32_t)(tu_rand(&rs) % 60); /* some documents are empty */
        for (uint32_t k = 0; k < n; k++) {
            double u = (double)(tu_rand(&rs) >> 11) / 9007199254740992.0;
            uint32_t t = (uint32_t)(RND_VOCAB * u * u * u);
            char w[16];
            int wl = 0;
            w[wl++] = 'q';
            for (uint32_t x = t; x; x /= 26) w[wl++] = (char)('a' + x % 26);
            w[wl] = '\0';
            len += (size_t)snprintf(text + len, sizeof text - len, "%s ", w);
        }
        snprintf(docno, sizeof docno, "R%u-%llx", d, (unsigned long long)(tu_rand(&rs) & 0xFFFF));
        ck_assert_msg(cls_builder_add(b, docno, strlen(docno), text, len) == CLS_OK, "%s", cls_last_error());
    }
    char *path = tu_strdup(tu_tmp_path("random.idx"));
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    return path;
}

/* Export orig, import that into every codec at block sizes 64 and 512, compare, export again
 * and compare the bytes. */
static void roundtrip_all(const char *orig_path, const char *desc)
{
    cls_index *orig = open_ok(orig_path);
    /* same_index on two empty indexes would prove nothing */
    ck_assert_msg(orig->num_docs > 0 && orig->num_terms > 0 && orig->num_postings > 0, "%s: an empty collection", desc);
    char *a = tu_strdup(tu_tmp_path("a.ciff"));
    export_ok(orig, a, desc);
    static const uint32_t sizes[] = {64, 512};
    for (int c = 0; c < CLS_NUM_CODECS; c++)
        for (int k = 0; k < 2; k++) {
            cls_build_opts o;
            cls_build_defaults(&o);
            o.codec = (cls_codec)c;
            o.block_size = sizes[k];
            char what[128];
            snprintf(what, sizeof what, "%s, block %u", cls_codec_name(o.codec), o.block_size);
            char *x = tu_strdup(tu_tmp_path("imported.idx")), *b = tu_strdup(tu_tmp_path("b.ciff"));
            cls_analyzer_opts an;
            cls_index_analyzer(orig, &an);
            ck_assert_msg(cls_ciff_import(a, &an, &o, x) == CLS_OK, "%s: import: %s", what, cls_last_error());
            cls_index *imp = open_ok(x);
            cls_index_stats st;
            cls_index_get_stats(imp, &st);
            ck_assert_int_eq(st.codec, o.codec);
            ck_assert_uint_eq(st.block_size, o.block_size);
            same_index(orig, imp, what);
            export_ok(imp, b, desc);
            ck_assert_msg(same_file(a, b), "%s: the second export differs from the first", what);
            cls_index_close(imp);
            remove(x);
            remove(b);
            free(x);
            free(b);
        }
    remove(a);
    free(a);
    cls_index_close(orig);
}

/* ---- tests -------------------------------------------------------------------------------- */

START_TEST(roundtrip_random_every_codec)
{
    char *p = random_index(42, NULL);
    roundtrip_all(p, "random collection");
    remove(p);
    free(p);
    /* a source index in another layout gives the same CIFF */
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = CLS_CODEC_RAW;
    o.block_size = 256;
    char *q = random_index(42, NULL), *r = random_index(42, &o);
    char *a = tu_strdup(tu_tmp_path("a.ciff")), *b = tu_strdup(tu_tmp_path("b.ciff"));
    cls_index *x = open_ok(q), *y = open_ok(r);
    uint32_t max_df = 0;
    for (uint32_t t = 0; t < x->num_terms; t++)
        if (x->terms[t].df > max_df) max_df = x->terms[t].df;
    ck_assert_msg(max_df > 2 * 512, "the collection should have lists of several 512-blocks (longest: %u)", max_df);
    export_ok(x, a, "");
    export_ok(y, b, "");
    ck_assert(same_file(a, b));
    cls_index_close(x);
    cls_index_close(y);
    remove(q), remove(r), remove(a), remove(b);
    free(q), free(r), free(a), free(b);
}
END_TEST

typedef struct doc_ctx {
    cls_builder *b;
    cls_status err;
} doc_ctx;

static int on_doc(void *user, const char *docno, size_t dl, const char *text, size_t tl)
{
    doc_ctx *c = user;
    c->err = cls_builder_add(c->b, docno, dl, text, tl);
    return c->err != CLS_OK;
}

/* Data part (test_ciff_data): CACM. */
START_TEST(roundtrip_cacm)
{
    const char *src = tu_data_path("cacm/cacm.tar.gz");
    doc_ctx c = {NULL, CLS_OK};
    ck_assert_int_eq(cls_builder_create(NULL, &c.b), CLS_OK);
    ck_assert_msg(cls_corpus_read(CLS_CORPUS_HTML, src, on_doc, &c) == CLS_OK && c.err == CLS_OK, "%s",
                  cls_last_error());
    char *p = tu_strdup(tu_tmp_path("cacm.idx"));
    ck_assert_msg(cls_builder_write(c.b, p) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(c.b);
    roundtrip_all(p, "CACM");
    /* the size, for the record */
    cls_index *idx = open_ok(p);
    char *a = tu_strdup(tu_tmp_path("cacm.ciff"));
    export_ok(idx, a, "CACM");
    struct stat st;
    ck_assert_int_eq(stat(a, &st), 0);
    cls_index_stats is;
    cls_index_get_stats(idx, &is);
    fprintf(stderr, "CACM: %u documents, %u terms, %llu postings: CIFF %lld bytes, index (%s, block %u) %llu bytes\n",
            is.num_docs, is.num_terms, (unsigned long long)is.num_postings, (long long)st.st_size,
            cls_codec_name(is.codec), is.block_size, (unsigned long long)is.file_bytes);
    /* the analyzer given to the import is the one recorded (NULL: the defaults) */
    char *x = tu_strdup(tu_tmp_path("cacm-default.idx"));
    ck_assert_int_eq(cls_ciff_import(a, NULL, NULL, x), CLS_OK);
    cls_index *y = open_ok(x);
    cls_analyzer_opts an, def;
    cls_index_analyzer(y, &an);
    cls_analyzer_defaults(&def);
    ck_assert(an.possessive == def.possessive && an.lowercase == def.lowercase && an.stopwords == def.stopwords &&
              an.stem == def.stem);
    cls_index_close(y);
    cls_index_close(idx);
    remove(x), remove(a), remove(p);
    free(x), free(a), free(p);
}
END_TEST

/* Our bytes are CIFF's bytes: the export of the tiny collection equals the encoding written
 * here from the format's description; its import (lists out of term order) is right. */
START_TEST(wire_format)
{
    pb f = {0}, sorted = {0};
    tiny(&f, V_OK, "tiny");
    tiny(&sorted, V_SORTED, "tiny");
    char *in = tu_strdup(tu_tmp_path("tiny.ciff")), *x = tu_strdup(tu_tmp_path("tiny.idx"));
    char *out = tu_strdup(tu_tmp_path("tiny-out.ciff")), *want = tu_strdup(tu_tmp_path("tiny-want.ciff"));
    tu_write_file(in, f.p, f.n);
    tu_write_file(want, sorted.p, sorted.n);
    for (int c = 0; c < CLS_NUM_CODECS; c++) {
        cls_build_opts o;
        cls_build_defaults(&o);
        o.codec = (cls_codec)c;
        ck_assert_msg(cls_ciff_import(in, &EXACT, &o, x) == CLS_OK, "%s", cls_last_error());
        cls_index *idx = open_ok(x);
        ck_assert_uint_eq(idx->num_docs, 3);
        ck_assert_uint_eq(idx->num_terms, 2);
        ck_assert_uint_eq(idx->num_postings, 3);
        ck_assert_uint_eq(idx->num_tokens, 7);
        ck_assert_str_eq(cls_index_docno(idx, 0), "d0");
        ck_assert_str_eq(cls_index_docno(idx, 2), "d2");
        ck_assert_uint_eq(idx->doclen[0], 1);
        ck_assert_uint_eq(idx->doclen[1], 2);
        ck_assert_uint_eq(idx->doclen[2], 4);
        uint32_t apple = idx_lookup(idx, "apple", 5), banana = idx_lookup(idx, "banana", 6);
        ck_assert_uint_eq(apple, 0);
        ck_assert_uint_eq(banana, 1);
        uint32_t docs[IDX_MAX_BLOCK], freqs[IDX_MAX_BLOCK];
        ck_assert_int_eq(idx_decode_block(idx, idx->terms[apple].first_block, docs, freqs), CLS_OK);
        ck_assert(idx->terms[apple].df == 2 && docs[0] == 0 && freqs[0] == 1 && docs[1] == 2 && freqs[1] == 3);
        ck_assert_int_eq(idx_decode_block(idx, idx->terms[banana].first_block, docs, freqs), CLS_OK);
        ck_assert(idx->terms[banana].df == 1 && docs[0] == 1 && freqs[0] == 2);
        cls_analyzer_opts an;
        cls_index_analyzer(idx, &an);
        ck_assert(an.possessive == EXACT.possessive && an.lowercase == EXACT.lowercase &&
                  an.stopwords == EXACT.stopwords && an.stem == EXACT.stem);
        export_ok(idx, out, "tiny");
        ck_assert_msg(same_file(out, want), "codec %s: export differs from the reference encoding",
                      cls_codec_name(o.codec));
        cls_index_close(idx);
        remove(out);
        remove(x);
    }
    /* gzip-compressed input reads the same */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s.gz'", in, in);
    if (system(cmd) == 0) {
        char gz[4200];
        snprintf(gz, sizeof gz, "%s.gz", in);
        ck_assert_msg(cls_ciff_import(gz, &EXACT, NULL, x) == CLS_OK, "%s", cls_last_error());
        cls_index *idx = open_ok(x);
        export_ok(idx, out, "tiny");
        ck_assert(same_file(out, want));
        cls_index_close(idx);
        remove(gz);
        remove(out);
        remove(x);
    } else {
        fprintf(stderr, "SKIP: no gzip command; .ciff.gz input not tested\n");
    }
    remove(in), remove(want);
    free(in), free(x), free(out), free(want);
    free(f.p);
    free(sorted.p);
}
END_TEST

START_TEST(malformed_fields)
{
    pb f = {0};
    for (int v = V_VERSION; v < V_COUNT; v++) {
        tiny(&f, v, "tiny");
        char what[64];
        snprintf(what, sizeof what, "variant %d (wants '%s')", v, V_WANT[v]);
        import_fails(f.p, f.n, CLS_E_FORMAT, V_WANT[v], what);
    }
    free(f.p);
}
END_TEST

START_TEST(truncated_and_foreign)
{
    pb f = {0};
    tiny(&f, V_OK, "tiny");
    /* every proper prefix */
    for (size_t n = 0; n < f.n; n++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", n, f.n);
        import_fails(f.p, n, CLS_E_FORMAT, n == 0 ? "empty" : NULL, what);
    }
    /* a varint of 11 bytes, one that overflows 64 bits, an absurd size */
    unsigned char ff[16];
    memset(ff, 0xFF, sizeof ff);
    import_fails(ff, 11, CLS_E_FORMAT, "varint", "11-byte varint");
    unsigned char over[10] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02};
    import_fails(over, sizeof over, CLS_E_FORMAT, "overflows", "varint past 64 bits");
    unsigned char big[6] = {0x80, 0x80, 0x80, 0x80, 0x10, 0x08}; /* 2^32 */
    import_fails(big, sizeof big, CLS_E_FORMAT, "1 GiB", "absurd size");
    /* a text file, a clsearch index, a header that is not protobuf */
    const char *text = "<html><body>hello, world: not CIFF at all</body></html>\n";
    import_fails(text, strlen(text), CLS_E_FORMAT, NULL, "an HTML file");
    const char *json = "{\"id\": \"d1\", \"contents\": \"text\"}\n";
    import_fails(json, strlen(json), CLS_E_FORMAT, NULL, "a JSON line");
    char *p = random_index(3, NULL);
    size_t len;
    unsigned char *img = tu_read_file(p, &len);
    import_fails(img, len, CLS_E_FORMAT, "clsearch index", "an index file");
    free(img);
    remove(p);
    free(p);
    unsigned char junk[5] = {4, 0xFF, 0xFF, 0xFF, 0xFF};
    import_fails(junk, sizeof junk, CLS_E_FORMAT, "protobuf", "junk header");
    /* a damaged gzip stream */
    unsigned char gz[12] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xAB, 0xCD};
    char *in = tu_strdup(tu_tmp_path("bad.ciff.gz")), *out = tu_strdup(tu_tmp_path("gz-out.idx"));
    tu_write_file(in, gz, sizeof gz);
    cls_status s = cls_ciff_import(in, NULL, NULL, out);
    ck_assert_msg(s == CLS_E_FORMAT, "damaged gzip: %d %s", (int)s, cls_last_error());
    ck_assert(!leftovers(out));
    remove(in);
    free(in);
    free(out);
    free(f.p);
}
END_TEST

/* Any byte of a valid file changed: either still valid CIFF (a docno letter, a length) or a
 * clean CLS_E_FORMAT, never a crash (the sanitizer build runs this too). */
START_TEST(flipped_bytes)
{
    pb f = {0};
    tiny(&f, V_OK, "tiny");
    unsigned char *img = malloc(f.n);
    ck_assert(img != NULL);
    char *in = tu_strdup(tu_tmp_path("flip.ciff")), *out = tu_strdup(tu_tmp_path("flip.idx"));
    static const unsigned char delta[] = {0x01, 0x80, 0xFF, 0x7F};
    unsigned ok = 0, bad = 0;
    for (size_t i = 0; i < f.n; i++)
        for (size_t k = 0; k < sizeof delta; k++) {
            memcpy(img, f.p, f.n);
            img[i] ^= delta[k];
            tu_write_file(in, img, f.n);
            cls_status s = cls_ciff_import(in, &EXACT, NULL, out);
            ck_assert_msg(s == CLS_OK || s == CLS_E_FORMAT, "byte %zu ^ 0x%02x: status %d: %s", i, delta[k], (int)s,
                          cls_last_error());
            if (s == CLS_OK) {
                cls_index *idx = open_ok(out);
                cls_index_close(idx);
                remove(out);
                ok++;
            } else {
                ck_assert_msg(!leftovers(out), "byte %zu ^ 0x%02x: left a file behind", i, delta[k]);
                bad++;
            }
        }
    ck_assert(bad > ok);
    remove(in);
    free(in), free(out), free(img), free(f.p);
}
END_TEST

START_TEST(arguments_and_paths)
{
    /* missing input, a folder as input */
    char *out = tu_strdup(tu_tmp_path("args-out.idx"));
    ck_assert_int_eq(cls_ciff_import("/nonexistent/in.ciff", NULL, NULL, out), CLS_E_IO);
    ck_assert(strstr(cls_last_error(), "/nonexistent/in.ciff") != NULL);
    char *dir = tu_strdup(tu_tmp_path("folder"));
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(cls_ciff_import(dir, NULL, NULL, out), CLS_E_IO);
    ck_assert(!exists(out));
    ck_assert_int_eq(cls_ciff_import(NULL, NULL, NULL, out), CLS_E_ARG);
    ck_assert_int_eq(cls_ciff_import("x", NULL, NULL, NULL), CLS_E_ARG);
    /* a bad layout is refused before the file is read */
    pb f = {0};
    tiny(&f, V_OK, "tiny");
    char *in = tu_strdup(tu_tmp_path("args.ciff"));
    tu_write_file(in, f.p, f.n);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.block_size = 100;
    ck_assert_int_eq(cls_ciff_import(in, NULL, &o, out), CLS_E_ARG);
    ck_assert(!exists(out));
    /* an index path in a missing folder: CLS_E_IO, nothing left */
    char *deep = tu_strdup(tu_tmp_path("missing-folder"));
    char deep_out[4200];
    snprintf(deep_out, sizeof deep_out, "%s/x.idx", deep);
    ck_assert_int_eq(cls_ciff_import(in, NULL, NULL, deep_out), CLS_E_IO);
    ck_assert(!exists(deep));

    /* exports */
    ck_assert_msg(cls_ciff_import(in, &EXACT, NULL, out) == CLS_OK, "%s", cls_last_error());
    cls_index *idx = open_ok(out);
    char *ref = tu_strdup(tu_tmp_path("ref.ciff"));
    export_ok(idx, ref, "tiny");
    ck_assert(same_file(ref, in) == 0); /* lists re-ordered: not the input's bytes */
    ck_assert_int_eq(cls_ciff_export(NULL, ref, ""), CLS_E_ARG);
    ck_assert_int_eq(cls_ciff_export(idx, NULL, ""), CLS_E_ARG);
    ck_assert_int_eq(cls_ciff_export(idx, deep_out, "tiny"), CLS_E_IO);
    ck_assert(!exists(deep));
    ck_assert_int_eq(cls_ciff_export(idx, dir, "tiny"), CLS_E_IO); /* a folder */
    ck_assert(strstr(cls_last_error(), "folder") != NULL);
    char tmpl[4200];
    snprintf(tmpl, sizeof tmpl, "%s.tmp.", dir);
    ck_assert(!leftovers(tmpl));
    /* a .gz name would promise compression the export does not do */
    char gzname[4200];
    snprintf(gzname, sizeof gzname, "%s.gz", ref);
    ck_assert_int_eq(cls_ciff_export(idx, gzname, "tiny"), CLS_E_ARG);
    ck_assert(!exists(gzname));
    /* NULL description: empty */
    char *plain = tu_strdup(tu_tmp_path("plain.ciff"));
    export_ok(idx, plain, NULL);
    /* replacing a file; the temporary file is gone afterwards */
    tu_write_file(plain, "old", 3);
    export_ok(idx, plain, "tiny");
    ck_assert(same_file(plain, ref));
    snprintf(tmpl, sizeof tmpl, "%s.tmp.", plain);
    ck_assert(!leftovers(tmpl));
    /* a character device is written in place, never replaced */
    struct stat st;
    export_ok(idx, "/dev/null", "tiny");
    ck_assert(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
        ck_assert_int_eq(cls_ciff_export(idx, "/dev/full", "tiny"), CLS_E_IO);
        ck_assert(lstat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    }
    /* through a symbolic link: the file it names is replaced, the link stays */
    char *target = tu_strdup(tu_tmp_path("target.ciff")), *link = tu_strdup(tu_tmp_path("link.ciff"));
    tu_write_file(target, "old", 3);
    ck_assert_int_eq(symlink(target, link), 0);
    export_ok(idx, link, "tiny");
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(same_file(target, ref));
    remove(link);
    remove(target);
    /* a dangling link: refused, left alone */
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(cls_ciff_export(idx, link, "tiny"), CLS_E_IO);
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode) && !exists(target));
    remove(link);
    /* importing through a symbolic link: the index goes where it points, the link stays */
    tu_write_file(target, "old", 3);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_msg(cls_ciff_import(in, &EXACT, NULL, link) == CLS_OK, "%s", cls_last_error());
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    cls_index *via = open_ok(target);
    same_index(idx, via, "imported through a link");
    cls_index_close(via);
    remove(link);
    remove(target);
    /* ... and never over a device a link names */
    ck_assert_int_eq(symlink("/dev/null", link), 0);
    ck_assert_int_eq(cls_ciff_import(in, &EXACT, NULL, link), CLS_E_IO);
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    remove(link);
    ck_assert_int_eq(cls_ciff_import(in, &EXACT, NULL, "/dev/null"), CLS_E_IO);
    ck_assert(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    /* a FIFO is streamed into */
    char *fifo = tu_strdup(tu_tmp_path("pipe.ciff")), *got = tu_strdup(tu_tmp_path("from-pipe.ciff"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int rd = open(fifo, O_RDONLY), wr = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[4096];
        ssize_t n;
        while (rd >= 0 && wr >= 0 && (n = read(rd, buf, sizeof buf)) > 0)
            if (write(wr, buf, (size_t)n) != n) _exit(2);
        _exit(rd >= 0 && wr >= 0 && close(wr) == 0 ? 0 : 1);
    }
    export_ok(idx, fifo, "tiny");
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    ck_assert(same_file(got, ref));
    remove(fifo);
    remove(got);
    cls_index_close(idx);

    remove(out), remove(in), remove(ref), remove(plain), rmdir(dir);
    free(out), free(in), free(ref), free(plain), free(dir), free(deep), free(target), free(link), free(fifo), free(got);
    free(f.p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ciff");
    TCase *tc = tcase_create("roundtrip");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, roundtrip_random_every_codec);
    tcase_add_test(tc, wire_format);
    tcase_add_test(tc, impact_scored);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("malformed");
    tcase_set_timeout(tm, 600);
    tcase_add_test(tm, malformed_fields);
    tcase_add_test(tm, truncated_and_foreign);
    tcase_add_test(tm, flipped_bytes);
    tcase_add_test(tm, arguments_and_paths);
    suite_add_tcase(s, tm);
    return s;
}

/* The cases that need ../shared/data: `test_ciff --data`, CTest's test_ciff_data. */
static Suite *data_suite(void)
{
    Suite *s = suite_create("ciff_data");
    TCase *tc = tcase_create("collections");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, roundtrip_cacm);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (!ciff_built()) {
        printf("SKIP: built without CIFF support (CLSEARCH_CIFF=OFF)\n");
        return TU_SKIP;
    }
    static const char *const needs[] = {"cacm/cacm.tar.gz", NULL};
    return tu_main(argc, argv, suite, data_suite, needs);
}
