/* The learning-to-rank features (src/rank/features.h): every feature of a tiny hand-made index
 * against values worked out by hand; the block-skipping walk against whole decoded lists on an
 * index of many blocks, and bm25_sum against the first stage's score bit for bit; feat_log
 * against libm; numeric stored fields; the qrels reader; the command's output and its refusals.
 * With --data: CACM through the command (one line a candidate, labels from the qrels, every
 * value finite). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/bm25.h"
#include "index/index.h"
#include "query/batch.h"
#include "rank/features.h"
#include "testutil.h"

/* An index of the texts (docnos D0, D1, ...), analysed by lowercasing only, block size 64; with
 * fields: nf stored fields named names, doc d's values fields[d * nf + i] (NULL: absent). */
static cls_index *index_of(const char *const *texts, uint32_t n, const char *const *names, size_t nf,
                           const char *const *fields)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_build_opts o;
    cls_build_defaults(&o);
    o.block_size = 64;
    o.threads = 1;
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    if (nf) ck_assert_int_eq(cls_builder_set_fields(b, names, nf), CLS_OK);
    for (uint32_t d = 0; d < n; d++) {
        char docno[32];
        snprintf(docno, sizeof docno, "D%u", d);
        size_t lens[8] = {0};
        for (size_t i = 0; i < nf; i++) lens[i] = fields[d * nf + i] ? strlen(fields[d * nf + i]) : 0;
        cls_doc doc = {docno, strlen(docno), texts[d], strlen(texts[d]), nf, nf ? fields + d * nf : NULL, lens};
        ck_assert_msg(cls_builder_add_doc(b, &doc) == CLS_OK, "%s", cls_last_error());
    }
    return tu_builder_open(b, "features.idx");
}

static void near(const char *what, float got, double want)
{
    double tol = 2e-6 * fabs(want) + 1e-6;
    ck_assert_msg(fabs((double)got - want) <= tol, "%s: %.9g, by hand %.9g", what, (double)got, want);
}

/* N = 5 documents, |C| = 12 tokens, avgdl = 12 / 5 = 2.4. */
static const char *const TINY[] = {"apple banana apple", "banana cherry", "apple apple apple cherry date", "date",
                                   "cherry"};

/* The query "apple cherry zzz": zzz is unknown, so n = 2 terms, apple then cherry.
 *   apple: df 2, cf 5: idf = ln(1 + (5 - 2 + 0.5) / (2 + 0.5)) = ln 2.4 = 0.875468737, pc = 5/12
 *   cherry: df 3, cf 3: idf = ln(1 + 2.5 / 3.5) = ln(12/7) = 0.538996501, pc = 3/12 = 0.25
 * D2 "apple apple apple cherry date": dl 5, norm = 0.9 (1 - 0.4 + 0.4 x 5 / 2.4) = 1.29
 *   apple tf 3: bm25 = 0.875468737 x 3 / 4.29 = 0.6122159; tfidf = 2.62640621;
 *     lm_dir = ln((3 + 2500 x 5/12) / 2505) = ln(1044.6667 / 2505) = -0.874590879;
 *     lm_jm = ln(0.9 x 3/5 + 0.1 x 5/12) = ln(0.5816667) = -0.541857733
 *   cherry tf 1: bm25 = 0.538996501 / 2.29 = 0.235369651; tfidf = 0.538996501;
 *     lm_dir = ln((1 + 625) / 2505) = -1.38669364; lm_jm = ln(0.9 / 5 + 0.025) = ln 0.205 = -1.5847453
 * D3 "date": dl 1, holds neither: tf, bm25, tfidf 0;
 *   lm_dir: ln(1041.6667 / 2501) = -0.875868657, ln(625 / 2501) = -1.38669428;
 *   lm_jm: ln(0.1 x 5/12) = -3.17805383, ln(0.025) = -3.68887945
 * Each family's aggregates: sum, min, max, mean = sum / 2, variance = ((a - mean)^2 + (b -
 * mean)^2) / 2 = ((a - b) / 2)^2. */
static const double D2_WANT[FEAT_FIXED] = {
    4, 1, 3, 2, 1,                                                   /* tf 3, 1: variance ((3 - 1) / 2)^2 */
    1.41446524, 0.538996501, 0.875468737, 0.707232619, 0.0283033915, /* idf: ((0.8755 - 0.5390) / 2)^2 */
    0.847585551, 0.235369651, 0.6122159, 0.423792776, 0.0355032739,  /* bm25 */
    3.16540271, 0.538996501, 2.62640621, 1.58270136, 1.08931983,     /* tfidf */
    -2.26128452, -1.38669364, -0.874590879, -1.13064226, 0.06556231, /* lm_dir */
    -2.12660303, -1.5847453, -0.541857733, -1.06330152, 0.271903619, /* lm_jm */
    2, 1, 5, 2,                                                      /* covered, ratio, doc_len, query_len */
};
static const double D3_WANT[FEAT_FIXED] = {
    0, 0, 0, 0, 0,
    1.41446524, 0.538996501, 0.875468737, 0.707232619, 0.0283033915,
    0, 0, 0, 0, 0,
    0, 0, 0, 0, 0,
    -2.26256294, -1.38669428, -0.875868657, -1.13128147, 0.0652357045,
    -6.86693328, -3.68887945, -3.17805383, -3.43346664, 0.0652357045,
    0, 0, 1, 2,
};

START_TEST(tiny_index_by_hand)
{
    cls_index *idx = index_of(TINY, 5, NULL, 0, NULL);
    feat_params p;
    feat_params_default(&p);
    feat_extractor *x;
    ck_assert_msg(feat_create(idx, &p, &x) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(feat_count(x), FEAT_FIXED);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "1", "apple cherry zzz"), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "2", "zzz"), CLS_OK);
    /* the first stage's order, not the docIDs' */
    uint32_t docs[] = {2, 3, 0};
    float out[3 * FEAT_FIXED];
    ck_assert_msg(feat_query(x, b, 0, docs, 3, out) == CLS_OK, "%s", cls_last_error());
    char what[96];
    for (uint32_t i = 0; i < FEAT_FIXED; i++) {
        snprintf(what, sizeof what, "D2 %s", feat_name(x, i));
        near(what, out[i], D2_WANT[i]);
        snprintf(what, sizeof what, "D3 %s", feat_name(x, i));
        near(what, out[FEAT_FIXED + i], D3_WANT[i]);
    }
    /* D0 "apple banana apple": apple tf 2, cherry absent; dl 3, norm 0.9 (0.6 + 0.5) = 0.99 */
    const float *d0 = out + 2 * FEAT_FIXED;
    near("D0 tf_sum", d0[0], 2);
    near("D0 bm25_max", d0[12], 0.875468737 * 2 / 2.99);
    near("D0 covered_ratio", d0[31], 0.5);
    near("D0 doc_len", d0[32], 3);
    /* a query of no known term: every aggregate 0, query_len 0 */
    ck_assert_int_eq(feat_query(x, b, 1, docs, 1, out), CLS_OK);
    for (uint32_t i = 0; i < FEAT_FIXED; i++)
        if (i != 32) ck_assert_msg(out[i] == 0.0f, "%s of an empty query: %g", feat_name(x, i), (double)out[i]);
    /* refused: a docID past the index, a query past the batch */
    uint32_t bad = 5;
    ck_assert_int_eq(feat_query(x, b, 0, &bad, 1, out), CLS_E_ARG);
    ck_assert_int_eq(feat_query(x, b, 2, docs, 1, out), CLS_E_ARG);
    cls_batch_free(b);
    feat_free(x);
    /* parameters out of range */
    feat_params q = p;
    q.mu = 0;
    ck_assert_int_eq(feat_create(idx, &q, &x), CLS_E_ARG);
    q = p;
    q.lambda = 1.5f;
    ck_assert_int_eq(feat_create(idx, &q, &x), CLS_E_ARG);
    q = p;
    q.b = -0.1f;
    ck_assert_int_eq(feat_create(idx, &q, &x), CLS_E_ARG);
    cls_index_close(idx);
}
END_TEST

/* The table: FEAT_FIXED distinct names, each with a definition and code. */
START_TEST(table_rows)
{
    const feat_row *t = feat_table();
    for (uint32_t i = 0; i < FEAT_FIXED; i++) {
        ck_assert(t[i].name && t[i].definition && t[i].value && strlen(t[i].definition) > 10);
        for (uint32_t j = 0; j < i; j++) ck_assert_str_ne(t[i].name, t[j].name);
    }
    ck_assert_str_eq(t[10].name, "bm25_sum");
    ck_assert_str_eq(t[FEAT_FIXED - 1].name, "query_len");
}
END_TEST

/* feat_log against libm's log over many binades, subnormals included. */
START_TEST(log_close_to_libm)
{
    uint64_t st = 7;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)tu_rand(&st) & 0x7F7FFFFFu; /* positive, finite */
        if (u == 0) continue;
        float x;
        memcpy(&x, &u, sizeof x);
        double want = log((double)x), got = feat_log(x);
        ck_assert_msg(fabs(got - want) <= 4e-7 * fabs(want) + 2e-7, "ln %a: %.9g, libm %.9g", (double)x, got, want);
    }
    ck_assert(feat_log(1.0f) == 0.0f);
    ck_assert(feat_log(0.0f) < -1e38f && feat_log(-1.0f) < -1e38f);
}
END_TEST

/* Documents over w0..w199, small ids far more frequent: lists of one posting to many blocks. */
static char **random_texts(uint64_t seed, uint32_t n)
{
    char **t = malloc(n * sizeof *t);
    ck_assert(t);
    uint64_t st = seed;
    for (uint32_t d = 0; d < n; d++) {
        char buf[1024];
        size_t len = 0;
        uint32_t k = 1 + (uint32_t)(tu_rand(&st) % 40);
        for (uint32_t i = 0; i < k; i++) {
            double u = (double)(tu_rand(&st) % 100000) / 100000.0;
            len += (size_t)snprintf(buf + len, sizeof buf - len, "w%u ", (uint32_t)(u * u * 200));
        }
        t[d] = tu_strdup(buf);
    }
    return t;
}

/* The walk that skips blocks finds the frequencies a whole decode finds; every row equals
 * feat_pair_compute on them bit for bit; bm25_sum is the reference engine's score bit for bit. */
START_TEST(walk_matches_whole_lists)
{
    const uint32_t N = 6000;
    char **texts = random_texts(11, N);
    cls_index *idx = index_of((const char *const *)texts, N, NULL, 0, NULL);
    feat_params p;
    feat_params_default(&p);
    feat_extractor *x;
    ck_assert_int_eq(feat_create(idx, &p, &x), CLS_OK);
    cls_engine *e;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &e), CLS_OK);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    const char *qs[] = {"w0 w1", "w150 w2 w2 w199", "w3^2 w40 w77 nosuch", "w190", "w5 w6 w7 w8 w9 w10"};
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        char qid[8];
        snprintf(qid, sizeof qid, "%zu", i);
        ck_assert_int_eq(cls_batch_add(b, qid, qs[i]), CLS_OK);
    }
    cls_search_params sp;
    cls_search_defaults(&sp);
    sp.k = 300;
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    ck_assert_int_eq(cls_engine_search(e, b, &sp, r), CLS_OK);
    uint32_t *ld = malloc((N + IDX_MAX_BLOCK) * 4), *lf = malloc((N + IDX_MAX_BLOCK) * 4);
    uint32_t *cand = malloc((300 + 50) * sizeof *cand);
    float *rows = malloc((300 + 50) * FEAT_FIXED * sizeof *rows), want[FEAT_FIXED], scratch[FEAT_FAMILIES * 8];
    uint32_t tf[8];
    uint64_t checked = 0;
    double avg = idx->coll_avg_doc_len;
    for (size_t q = 0; q < cls_batch_count(b); q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(r, q, &n, &docs, &scores);
        ck_assert_uint_gt(n, 0);
        /* the top k, then documents the first stage did not return (most hold no query term) */
        memcpy(cand, docs, n * sizeof *cand);
        uint64_t st = q + 1;
        for (int j = 0; j < 50; j++) cand[n + j] = (uint32_t)(tu_rand(&st) % N);
        uint32_t m = (uint32_t)n + 50;
        ck_assert_msg(feat_query(x, b, q, cand, m, rows) == CLS_OK, "%s", cls_last_error());
        const batch_query *bq = &b->q[q];
        const batch_term *bt = b->terms + bq->term_start;
        feat_term terms[8];
        for (uint32_t i = 0; i < bq->num_terms; i++) {
            uint32_t cnt;
            ck_assert_int_eq(idx_decode_list(idx, bt[i].term, ld, lf, &cnt), CLS_OK);
            uint64_t cf = 0;
            for (uint32_t k = 0; k < cnt; k++) cf += lf[k];
            terms[i] = (feat_term){bm25_idf(idx->coll_docs, idx->terms[bt[i].term].df), bm25_weight(idx, bt[i].term, bt[i].weight),
                                   (float)((double)cf / (double)idx->num_tokens)};
        }
        for (uint32_t j = 0; j < m; j++) {
            for (uint32_t i = 0; i < bq->num_terms; i++) {
                uint32_t cnt;
                ck_assert_int_eq(idx_decode_list(idx, bt[i].term, ld, lf, &cnt), CLS_OK);
                tf[i] = 0;
                for (uint32_t k = 0; k < cnt; k++)
                    if (ld[k] == cand[j]) tf[i] = lf[k];
            }
            uint32_t dl = idx->doclen[cand[j]];
            feat_doc d = {dl, bm25_norm(p.k1, p.b, dl, avg)};
            feat_pair_compute(terms, tf, bq->num_terms, &d, idx->scoring, &p, scratch, want);
            ck_assert_msg(memcmp(want, rows + (size_t)j * FEAT_FIXED, sizeof want) == 0, "query %zu, doc %u", q, cand[j]);
            if (j < n) {
                ck_assert_msg(memcmp(&rows[(size_t)j * FEAT_FIXED + 10], &scores[j], sizeof(float)) == 0,
                              "query %zu, doc %u: bm25_sum %.9g, score %.9g", q, cand[j],
                              (double)rows[(size_t)j * FEAT_FIXED + 10], (double)scores[j]);
                ck_assert(rows[(size_t)j * FEAT_FIXED + 30] >= 1); /* a candidate of OR holds a term */
            }
            checked++;
        }
    }
    ck_assert_uint_gt(checked, 1000);
    free(ld);
    free(lf);
    free(cand);
    free(rows);
    cls_results_free(r);
    cls_batch_free(b);
    cls_engine_free(e);
    feat_free(x);
    cls_index_close(idx);
    for (uint32_t d = 0; d < N; d++) free(texts[d]);
    free(texts);
}
END_TEST

/* A random batch: nq queries of 0 to 12 terms, pairs of them with frequencies mostly 0 and
 * lengths from 0 up, in the ranges an index gives (idf above 0, pc from 1e-7 to 1/2). */
typedef struct rand_batch {
    feat_term terms[40 * 12];
    uint32_t term_start[40], num_terms[40];
    uint32_t pair_query[3000], tf_start[3000];
    feat_doc docs[3000];
    uint32_t tf[3000 * 12];
    feat_batch b;
} rand_batch;

static double unit(uint64_t *st) { return (double)(tu_rand(st) % 1000000) / 1000000.0; }

static void random_batch(rand_batch *r, uint64_t seed, cls_scoring scoring, const feat_params *p)
{
    uint64_t st = seed;
    size_t nt = 0, ntf = 0;
    for (uint32_t q = 0; q < 40; q++) {
        r->term_start[q] = (uint32_t)nt;
        r->num_terms[q] = q == 0 ? 0 : (uint32_t)(tu_rand(&st) % 13);
        for (uint32_t i = 0; i < r->num_terms[q]; i++, nt++) {
            float idf = (float)(0.01 + 10 * unit(&st));
            double qw = tu_rand(&st) % 4 == 0 ? 0.5 + 3 * unit(&st) : 1.0;
            r->terms[nt] = (feat_term){idf, scoring == CLS_SCORING_IMPACT ? (float)qw : (float)(idf * qw),
                                       (float)(1e-7 + 0.5 * unit(&st) * unit(&st))};
        }
    }
    for (uint32_t j = 0; j < 3000; j++) {
        uint32_t q = (uint32_t)(tu_rand(&st) % 40), sum = 0;
        r->pair_query[j] = q;
        r->tf_start[j] = (uint32_t)ntf;
        for (uint32_t i = 0; i < r->num_terms[q]; i++) {
            uint32_t f = tu_rand(&st) % 3 == 0 ? 1 + (uint32_t)(tu_rand(&st) % 50) : 0;
            r->tf[ntf++] = f;
            sum += f;
        }
        uint32_t dl = j % 97 == 0 && sum == 0 ? 0 : sum + (uint32_t)(tu_rand(&st) % 5000);
        r->docs[j] = (feat_doc){dl, bm25_norm(p->k1, p->b, dl, 812.5)};
    }
    r->b = (feat_batch){r->terms, r->term_start, r->num_terms, 40, nt, r->pair_query, r->tf_start, r->docs, 3000,
                        r->tf, ntf, scoring, *p};
}

/* cl/features.cl on the device ($CLS_TEST_DEVICE, POCL by default) against the C table: every
 * row bit for bit, for BM25 and impact indexes, at the defaults and at other mu and lambda. */
START_TEST(device_twin_bit_for_bit)
{
    rand_batch *r = malloc(sizeof *r);
    float *want = malloc(3000 * FEAT_FIXED * sizeof *want), *got = malloc(3000 * FEAT_FIXED * sizeof *got);
    float scratch[FEAT_FAMILIES * 12];
    ck_assert(r && want && got);
    for (int sc = 0; sc < 2; sc++) {
        cls_scoring scoring = sc ? CLS_SCORING_IMPACT : CLS_SCORING_BM25;
        feat_cl *c;
        ck_assert_msg(feat_cl_create(tu_device(), scoring, &c) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(feat_cl_exact(c), "the device does not round division correctly: the twin cannot match");
        for (int v = 0; v < 2; v++) {
            feat_params p;
            feat_params_default(&p);
            if (v) {
                p.mu = 100;
                p.lambda = 0.7f;
                p.k1 = 1.2f;
                p.b = 0.75f;
            }
            random_batch(r, 17 + (uint64_t)(2 * sc + v), scoring, &p);
            ck_assert_int_eq(feat_batch_check(&r->b), CLS_OK);
            feat_batch_compute(&r->b, scratch, want);
            memset(got, 0xA5, 3000 * FEAT_FIXED * sizeof *got);
            ck_assert_msg(feat_cl_compute(c, &r->b, got) == CLS_OK, "%s", cls_last_error());
            for (uint32_t j = 0; j < 3000; j++)
                for (uint32_t i = 0; i < FEAT_FIXED; i++)
                    ck_assert_msg(memcmp(&want[j * FEAT_FIXED + i], &got[j * FEAT_FIXED + i], sizeof(float)) == 0,
                                  "scoring %d variant %d pair %u %s: C %a, device %a", sc, v, j, feat_table()[i].name,
                                  (double)want[j * FEAT_FIXED + i], (double)got[j * FEAT_FIXED + i]);
        }
        /* refused: a batch of the other scoring, an index past its arrays */
        r->b.scoring = sc ? CLS_SCORING_BM25 : CLS_SCORING_IMPACT;
        ck_assert_int_eq(feat_cl_compute(c, &r->b, got), CLS_E_ARG);
        r->b.scoring = scoring;
        r->tf_start[5] = (uint32_t)r->b.ntf;
        ck_assert_int_eq(feat_cl_compute(c, &r->b, got), r->num_terms[r->pair_query[5]] ? CLS_E_ARG : CLS_OK);
        r->pair_query[5] = 40;
        ck_assert_int_eq(feat_cl_compute(c, &r->b, got), CLS_E_ARG);
        feat_cl_free(c);
    }
    free(r);
    free(want);
    free(got);
}
END_TEST

/* Stored fields: "year" (numbers, one document lacking it) is a feature, "title" (text) and
 * "code" (a number but also "12a") are not. */
START_TEST(numeric_stored_fields)
{
    static const char *const names[] = {"title", "year", "code"};
    static const char *const fields[] = {"Apples", "1998", "7", "Cherries", NULL, "12a", "Dates", "-2.5e1", "3"};
    static const char *const texts[] = {"apple", "cherry", "date apple"};
    cls_index *idx = index_of(texts, 3, names, 3, fields);
    feat_params p;
    feat_params_default(&p);
    feat_extractor *x;
    ck_assert_int_eq(feat_create(idx, &p, &x), CLS_OK);
    ck_assert_uint_eq(feat_count(x), FEAT_FIXED + 1);
    ck_assert_str_eq(feat_name(x, FEAT_FIXED), "field:year");
    ck_assert_ptr_nonnull(strstr(feat_definition(x, FEAT_FIXED), "year"));
    ck_assert_ptr_null(feat_name(x, FEAT_FIXED + 1));
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "1", "apple"), CLS_OK);
    uint32_t docs[] = {2, 1, 0};
    float out[3 * (FEAT_FIXED + 1)];
    ck_assert_int_eq(feat_query(x, b, 0, docs, 3, out), CLS_OK);
    ck_assert(out[FEAT_FIXED] == -25.0f);
    ck_assert(out[2 * (FEAT_FIXED + 1) - 1] == 0.0f); /* D1 lacks it */
    ck_assert(out[3 * (FEAT_FIXED + 1) - 1] == 1998.0f);
    cls_batch_free(b);
    feat_free(x);
    cls_index_close(idx);
}
END_TEST

START_TEST(qrels_reader)
{
    const char *path = tu_tmp_path("qrels");
    const char *good = "1 0 D1 2\n\n1 Q0 D2 0\r\n2\t0\tD1\t-1\n";
    tu_write_file(path, good, strlen(good));
    feat_qrels *q;
    ck_assert_msg(feat_qrels_read(path, &q) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(feat_qrels_count(q), 3);
    int label, judged;
    ck_assert_int_eq(feat_qrels_label(q, "1", "D1", &label, &judged), CLS_OK);
    ck_assert(label == 2 && judged);
    ck_assert_int_eq(feat_qrels_label(q, "1", "D2", &label, &judged), CLS_OK);
    ck_assert(label == 0 && judged);
    ck_assert_int_eq(feat_qrels_label(q, "2", "D1", &label, &judged), CLS_OK);
    ck_assert(label == -1 && judged);
    ck_assert_int_eq(feat_qrels_label(q, "2", "D2", &label, &judged), CLS_OK);
    ck_assert(label == 0 && !judged);
    ck_assert_int_eq(feat_qrels_label(q, "1 D", "1", &label, &judged), CLS_OK); /* not "1 D1" by another split */
    feat_qrels_free(q);
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"1 0 D1\n", ":1: not a TREC judgement"},
        {"1 0 D1 x\n", ":1: not a TREC judgement"},
        {"1 0 D1 1 extra\n", ":1: not a TREC judgement"},
        {"1 0 D1 1\n1 0 D1 0\n", ":2: query 1 judges D1 again (first on line 1)"},
        {"\n\n", "holds no judgement"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_write_file(path, bad[i].text, strlen(bad[i].text));
        ck_assert_int_eq(feat_qrels_read(path, &q), CLS_E_FORMAT);
        ck_assert_msg(strstr(cls_last_error(), bad[i].says), "%s", cls_last_error());
    }
    remove(path);
    ck_assert_int_eq(feat_qrels_read(path, &q), CLS_E_IO);
}
END_TEST

/* ---- the command -------------------------------------------------------------------------------- */

/* The data lines of a features file: each checked (label, qid, features 1..nf in order, finite,
 * a docno after '#'); their count. head receives the number of '#' lines before them. */
static size_t check_lines(const char *path, uint32_t nf, size_t *head, void (*each)(void *, const char *, int, const char *),
                          void *ctx)
{
    FILE *f = fopen(path, "r");
    ck_assert(f);
    char *line = NULL;
    size_t cap = 0, n = 0;
    *head = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') {
            ck_assert_msg(n == 0, "a comment line among the data: %s", line);
            (*head)++;
            continue;
        }
        char *p = line, *end;
        long label = strtol(p, &end, 10);
        ck_assert_msg(end != p && *end == ' ' && strncmp(end, " qid:", 5) == 0, "%s", line);
        p = end + 5;
        char qid[64];
        size_t ql = strcspn(p, " ");
        ck_assert(ql > 0 && ql < sizeof qid);
        memcpy(qid, p, ql);
        qid[ql] = '\0';
        p += ql;
        for (uint32_t i = 1; i <= nf; i++) {
            ck_assert_msg(*p == ' ', "%s", line);
            unsigned long id = strtoul(p + 1, &end, 10);
            ck_assert_msg(id == i && *end == ':', "feature %u in %s", i, line);
            double v = strtod(end + 1, &p);
            ck_assert_msg(p != end + 1 && isfinite(v), "feature %u in %s", i, line);
        }
        ck_assert_msg(strncmp(p, " # ", 3) == 0, "%s", line);
        p += 3;
        p[strcspn(p, " \n")] = '\0';
        if (each) each(ctx, qid, (int)label, p);
        n++;
    }
    free(line);
    fclose(f);
    return n;
}

/* A small collection through the command: index with a numeric field, topics, qrels. */
static void small_collection(char **index, char **topics, char **qrels)
{
    char *corpus = tu_strdup(tu_tmp_path("features.jsonl"));
    const char *c = "{\"id\": \"a\", \"contents\": \"apple pie apple\", \"year\": 1990}\n"
                    "{\"id\": \"b\", \"contents\": \"cherry pie\", \"year\": 2001}\n"
                    "{\"id\": \"c\", \"contents\": \"apple cherry date\"}\n"
                    "{\"id\": \"d\", \"contents\": \"date plum\", \"year\": 1950}\n";
    tu_write_file(corpus, c, strlen(c));
    *index = tu_strdup(tu_tmp_path("features-cli.idx"));
    const char *err;
    int rc = tu_cli(NULL, NULL, &err, "index -q -c jsonl --store year -o '%s' '%s'", *index, corpus);
    ck_assert_msg(rc == 0, "%s", err);
    *topics = tu_strdup(tu_tmp_path("features.tsv"));
    const char *t = "7\tapple pie\nx9\tdate\n3\tnothingmatches\n";
    tu_write_file(*topics, t, strlen(t));
    *qrels = tu_strdup(tu_tmp_path("features.qrels"));
    const char *q = "7 0 a 2\n7 0 b 1\nx9 0 d 1\n";
    tu_write_file(*qrels, q, strlen(q));
    remove(corpus);
    free(corpus);
}

typedef struct seen {
    char lines[16][64];
    size_t n;
} seen;

static void remember(void *ctx, const char *qid, int label, const char *docno)
{
    seen *s = ctx;
    ck_assert(s->n < 16);
    snprintf(s->lines[s->n++], 64, "%d %s %s", label, qid, docno);
}

START_TEST(command_writes_and_refuses)
{
    char *x, *t, *q;
    const char *err;
    small_collection(&x, &t, &q);
    char *out = tu_strdup(tu_tmp_path("features.svm")), *so = tu_strdup(tu_tmp_path("features.stdout"));
    char *out2 = tu_strdup(tu_tmp_path("features-bad.svm"));
    int rc = tu_cli(NULL, so, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -o '%s'", x, t, q, out);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_msg(strstr(err, "5 lines of 35 features for 3 queries (1 without candidates), 3 judged, 3 relevant"), "%s", err);
    size_t head;
    seen s = {.n = 0};
    ck_assert_uint_eq(check_lines(out, FEAT_FIXED + 1, &head, remember, &s), 5);
    ck_assert_uint_eq(head, 2);
    /* apple pie: a (apple x2, pie) first, then b (pie), c (apple); x9 is written as its place, 2;
     * nothingmatches has no line */
    ck_assert_str_eq(s.lines[0], "2 7 a");
    ck_assert_str_eq(s.lines[1], "1 7 b"); /* pie in 2 tokens outranks apple in 3 */
    ck_assert_str_eq(s.lines[2], "0 7 c");
    ck_assert_str_eq(s.lines[3], "1 2 d");
    ck_assert_str_eq(s.lines[4], "0 2 c");
    unsigned char *text = tu_read_file(out, NULL);
    ck_assert_ptr_nonnull(strstr((char *)text, "35:field:year"));
    ck_assert_ptr_nonnull(strstr((char *)text, " 35:1990 # a\n"));
    ck_assert_ptr_nonnull(strstr((char *)text, " 35:1950 # d x9\n"));
    free(text);
    /* --list: the conventions and one line a feature; with -x the field as well */
    rc = tu_cli(NULL, so, &err, "features --list");
    ck_assert_msg(rc == 0, "%s", err);
    text = tu_read_file(so, NULL);
    ck_assert_ptr_nonnull(strstr((char *)text, "\n11\tbm25_sum\t"));
    ck_assert_ptr_nonnull(strstr((char *)text, "\n34\tquery_len\t"));
    free(text);
    rc = tu_cli(NULL, so, &err, "features --list -x '%s'", x);
    text = tu_read_file(so, NULL);
    ck_assert_ptr_nonnull(strstr((char *)text, "\n35\tfield:year\t"));
    free(text);
    /* writing over its own result is allowed, over anything else not */
    rc = tu_cli(NULL, so, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -k 1 -o '%s'", x, t, q, out);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(check_lines(out, FEAT_FIXED + 1, &head, NULL, NULL), 2);
    /* @x, @t, @q: the index, topics and qrels */
    static const struct {
        const char *args;
        int rc;
        const char *says;
    } bad[] = {
        {"", 2, "are required"},
        {"-x @x -q @t", 2, "are required"},
        {"-x @x -q @t --qrels @q -k 0", 2, "k must be"},
        {"-x @x -q @t --qrels @q --mu 0", 2, "mu must be"},
        {"-x @x -q @t --qrels @q --lambda 1.5", 2, "lambda must be"},
        {"-x @x -q @t --qrels @q --b x", 2, "--b takes a number"},
        {"-x @x -q @t --qrels @q -m nosuch", 2, "nosuch"},
        {"-x @x -q @t --qrels @q --nosuch", 2, "nosuch"},
        {"-x @x -q @t --qrels @q extra", 2, "unexpected argument 'extra'"},
        {"--list -q @t", 2, "--list"},
        {"-x @x -q @t --qrels @q.absent", 1, "reading the qrels"},
        {"-x @x -q @t --qrels @t", 1, "not a TREC judgement"},
        {"-x @x.absent -q @t --qrels @q", 1, "opening the index"},
        {"-x @x -q @t.absent --qrels @q", 1, "reading topics"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char cmd[2048] = "features ";
        size_t len = strlen(cmd);
        for (const char *a = bad[i].args; *a && len < sizeof cmd - 600; a++) {
            const char *sub = a[0] == '@' ? (a[1] == 'x' ? x : a[1] == 't' ? t : a[1] == 'q' ? q : NULL) : NULL;
            if (sub) {
                len += (size_t)snprintf(cmd + len, sizeof cmd - len, "'%s'", sub);
                a++;
                /* a suffix such as .absent goes inside the quotes */
                if (a[1] == '.') {
                    len--;
                    while (a[1] && a[1] != ' ') cmd[len++] = *++a;
                    cmd[len++] = '\'';
                    cmd[len] = '\0';
                }
            } else {
                cmd[len++] = *a;
                cmd[len] = '\0';
            }
        }
        snprintf(cmd + len, sizeof cmd - len, " -d ref -o '%s'", out2);
        int got = tu_cli(NULL, so, &err, "%s", cmd);
        ck_assert_msg(got == bad[i].rc && strstr(err, bad[i].says), "%s: %d %s", cmd, got, err);
        ck_assert_msg(!tu_exists(out2), "%s left %s", cmd, out2);
    }
    /* never over an input or a file of another kind */
    rc = tu_cli(NULL, so, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -o '%s'", x, t, q, q);
    ck_assert_msg(rc == 1 && strstr(err, "is the input"), "%s", err);
    rc = tu_cli(NULL, so, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -o '%s'", x, t, q, t);
    ck_assert_int_eq(rc, 1);
    tu_write_file(out2, "not features\n", 13);
    rc = tu_cli(NULL, so, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -o '%s'", x, t, q, out2);
    ck_assert_msg(rc == 1 && strstr(err, "not a clsearch features file"), "%s", err);
    remove(out2);
    remove(out);
    remove(so);
    remove(x);
    remove(t);
    remove(q);
    free(out);
    free(out2);
    free(so);
    free(x);
    free(t);
    free(q);
}
END_TEST

/* ---- CACM --------------------------------------------------------------------------------------- */

/* The qrels as the test reads them itself: "qid docno" -> relevance. */
typedef struct judged {
    char (*key)[160];
    int *rel;
    size_t n;
    size_t lines, labelled, relevant;
    char last_qid[64];
    size_t qids;
} judged;

static void check_label(void *ctx, const char *qid, int label, const char *docno)
{
    judged *j = ctx;
    char key[160];
    snprintf(key, sizeof key, "%s %s", qid, docno);
    int want = 0;
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->key[i], key) == 0) want = j->rel[i];
    ck_assert_msg(label == want, "%s: label %d, qrels %d", key, label, want);
    j->lines++;
    j->relevant += label > 0;
    if (strcmp(qid, j->last_qid) != 0) {
        snprintf(j->last_qid, sizeof j->last_qid, "%s", qid);
        j->qids++;
    }
}

START_TEST(cacm_through_the_command)
{
    char *x = tu_strdup(tu_tmp_path("cacm-features.idx"));
    const char *err;
    int rc = tu_cli(NULL, NULL, &err, "index -q -c html -o '%s' '%s'", x, tu_data_path("cacm/cacm.tar.gz"));
    ck_assert_msg(rc == 0, "%s", err);
    char *topics = tu_strdup(tu_data_path("cacm/topics.cacm.txt")), *qrels = tu_strdup(tu_data_path("cacm/qrels.cacm.txt"));
    char *out = tu_strdup(tu_tmp_path("cacm.svm")), *run = tu_strdup(tu_tmp_path("cacm.run"));
    rc = tu_cli(NULL, NULL, &err, "features -x '%s' -q '%s' --qrels '%s' -d ref -k 100 -o '%s'", x, topics, qrels, out);
    ck_assert_msg(rc == 0, "%s", err);
    rc = tu_cli(NULL, NULL, &err, "search -x '%s' -q '%s' -d ref -k 100 -o '%s'", x, topics, run);
    ck_assert_msg(rc == 0, "%s", err);
    judged j = {0};
    FILE *f = fopen(qrels, "r");
    ck_assert(f);
    char qid[64], docno[64], iter[16];
    int rel;
    j.key = malloc(4096 * sizeof *j.key);
    j.rel = malloc(4096 * sizeof *j.rel);
    while (fscanf(f, "%63s %15s %63s %d", qid, iter, docno, &rel) == 4) {
        ck_assert(j.n < 4096);
        snprintf(j.key[j.n], sizeof j.key[j.n], "%s %s", qid, docno);
        j.rel[j.n++] = rel;
    }
    fclose(f);
    ck_assert_uint_gt(j.n, 700);
    size_t head;
    size_t n = check_lines(out, FEAT_FIXED, &head, check_label, &j);
    /* one line a candidate: the run's lines, the same docnos in the same order */
    FILE *r = fopen(run, "r"), *o = fopen(out, "r");
    ck_assert(r && o);
    char rl[512], ol[4096];
    size_t runs = 0;
    while (fgets(ol, sizeof ol, o))
        if (ol[0] != '#') {
            ck_assert(fgets(rl, sizeof rl, r));
            char rq[64], rd[64];
            ck_assert_int_eq(sscanf(rl, "%63s %*s %63s", rq, rd), 2);
            char *c = strstr(ol, " # ");
            ck_assert_ptr_nonnull(c);
            c[3 + strcspn(c + 3, " \n")] = '\0';
            ck_assert_msg(strcmp(c + 3, rd) == 0, "line %zu: %s, the run's %s", runs + 1, c + 3, rd);
            ck_assert_msg(strstr(ol, " qid:") && strncmp(strstr(ol, " qid:") + 5, rq, strlen(rq)) == 0, "%s", ol);
            runs++;
        }
    ck_assert(!fgets(rl, sizeof rl, r));
    fclose(r);
    fclose(o);
    ck_assert_uint_eq(n, runs);
    ck_assert_uint_eq(j.lines, n);
    ck_assert_uint_gt(n, 5000);
    ck_assert_uint_eq(j.qids, 64);
    ck_assert_uint_gt(j.relevant, 300); /* most judged documents are in the top 100 of some query */
    free(j.key);
    free(j.rel);
    remove(out);
    remove(run);
    remove(x);
    free(out);
    free(run);
    free(x);
    free(topics);
    free(qrels);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("features");
    TCase *tc = tcase_create("features");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, tiny_index_by_hand);
    tcase_add_test(tc, table_rows);
    tcase_add_test(tc, log_close_to_libm);
    tcase_add_test(tc, walk_matches_whole_lists);
    tcase_add_test(tc, device_twin_bit_for_bit);
    tcase_add_test(tc, numeric_stored_fields);
    tcase_add_test(tc, qrels_reader);
    tcase_add_test(tc, command_writes_and_refuses);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("features_data");
    TCase *tc = tcase_create("cacm");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cacm_through_the_command);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", "cacm/topics.cacm.txt", "cacm/qrels.cacm.txt", NULL};
    return tu_main(argc, argv, plain_suite, data_suite, needs);
}
