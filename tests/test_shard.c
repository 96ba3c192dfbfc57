/* Document-range shards (src/index/index_shard.c; include/clsearch.h, "Document-range shards"):
 * every shard of a whole index scores its documents exactly as the whole index does, so that for
 * every mode, k 10 and 1000, on the reference engine and on the OpenCL device ($CLS_TEST_DEVICE,
 * default POCL's CPU device), the merge of the shards' top k (each docID plus its shard's base;
 * score descending, then docID ascending; AND-OR's AND hits first) is the whole index's top k:
 * the same docIDs in the same order, the same score bits. Shard sets of 1, 3 and 4 shards cut
 * by postings (uneven document ranges) and a set with empty shards, on a generated collection
 * and (the data part) on CACM. A shard carries its documents' lengths, docnos and stored fields,
 * every term with the collection's df, passes cls_index_check and `clsearch check`; damage and
 * forged shard fields are refused; the command cuts a set, or refuses and writes nothing. */
#define _XOPEN_SOURCE 700
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "generate.h"
#include "index/checksum.h"
#include "index/index.h"
#include "index/index_shard.h"
#include "testutil.h"

static cls_index *open_ok(const char *path)
{
    cls_index *x;
    ck_assert_msg(cls_index_open(path, &x) == CLS_OK, "%s: %s", path, cls_last_error());
    return x;
}

/* ---- topics --------------------------------------------------------------------------------- */

typedef struct topics {
    char **qid, **text;
    size_t n, cap;
} topics;

static void topics_add(topics *t, const char *qid, const char *text)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->qid = realloc(t->qid, t->cap * sizeof *t->qid);
        t->text = realloc(t->text, t->cap * sizeof *t->text);
        ck_assert(t->qid && t->text);
    }
    t->qid[t->n] = tu_strdup(qid);
    t->text[t->n++] = tu_strdup(text);
}

static int on_topic(void *user, const char *qid, const char *text)
{
    topics_add(user, qid, text);
    return 0;
}

static void topics_free(topics *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->qid[i]), free(t->text[i]);
    free(t->qid), free(t->text);
    memset(t, 0, sizeof *t);
}

static cls_batch *batch_of(const cls_index *idx, const topics *t)
{
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    for (size_t i = 0; i < t->n; i++)
        ck_assert_msg(cls_batch_add(b, t->qid[i], t->text[i]) == CLS_OK, "%s", cls_last_error());
    return b;
}

/* Queries that reach the pruning and skipping paths whatever the topics hold: the longest list
 * alone (more blocks than k: block-max pruning), the two longest (AND skips blocks), and a term
 * of one document with the longest (a list that most shards lack). */
static void add_probe_queries(const cls_index *idx, topics *t)
{
    uint32_t a = 0, b = 0, rare = UINT32_MAX;
    for (uint32_t i = 0; i < idx->num_terms; i++) {
        uint32_t df = idx->terms[i].df;
        if (df > idx->terms[a].df) b = a, a = i;
        else if (i != a && df > idx->terms[b].df) b = i;
        if (df == 1 && rare == UINT32_MAX) rare = i;
    }
    char ta[256], tb[256], tr[256], q[1024];
    size_t n;
    const char *s = idx_term_text(idx, a, &n);
    snprintf(ta, sizeof ta, "%.*s", (int)n, s);
    s = idx_term_text(idx, b, &n);
    snprintf(tb, sizeof tb, "%.*s", (int)n, s);
    snprintf(tr, sizeof tr, "%s", "");
    if (rare != UINT32_MAX) {
        s = idx_term_text(idx, rare, &n);
        snprintf(tr, sizeof tr, "%.*s", (int)n, s);
    }
    topics_add(t, "probe-1", ta);
    snprintf(q, sizeof q, "%s %s", ta, tb);
    topics_add(t, "probe-2", q);
    snprintf(q, sizeof q, "%s %s", tr, ta);
    topics_add(t, "probe-3", q);
}

/* ---- shard sets ----------------------------------------------------------------------------- */

#define MAX_SET 8

typedef struct shard_set {
    uint32_t n;
    uint32_t bounds[MAX_SET + 1];
    char *path[MAX_SET];
} shard_set;

/* Writes the shards of s (its bounds set) of whole and checks what each holds: its place, its
 * documents (lengths, docnos, stored fields) and terms (the collection's df, the postings of its
 * range), and cls_index_check. */
static void write_set(const cls_index *whole, shard_set *s, const char *name)
{
    const uint32_t N = whole->num_docs;
    ck_assert(s->n >= 1 && s->n <= MAX_SET && s->bounds[0] == 0 && s->bounds[s->n] == N);
    uint64_t *df_sum = calloc(whole->num_terms + 1, sizeof *df_sum), postings = 0, tokens = 0;
    ck_assert(df_sum != NULL);
    for (uint32_t i = 0; i < s->n; i++) {
        const uint32_t lo = s->bounds[i], hi = s->bounds[i + 1];
        s->path[i] = tu_strdup(tu_tmp_path(name));
        ck_assert_msg(cls_index_shard_write(whole, i, s->n, lo, hi, s->path[i]) == CLS_OK, "shard %u: %s", i,
                      cls_last_error());
        cls_index *x = open_ok(s->path[i]);
        uint32_t base, coll, sh, shs;
        ck_assert_int_eq(cls_index_shard_info(x, &base, &coll, &sh, &shs), 1);
        ck_assert(base == lo && coll == N && sh == i && shs == s->n);
        ck_assert_uint_eq(x->num_docs, hi - lo);
        ck_assert_uint_eq(x->num_terms, whole->num_terms);
        ck_assert(x->coll_tokens == whole->num_tokens && x->coll_avg_doc_len == whole->avg_doc_len);
        ck_assert(x->codec == whole->codec && x->block_size == whole->block_size && x->scoring == whole->scoring);
        ck_assert_str_eq(cls_index_collection(x), cls_index_collection(whole));
        ck_assert_uint_eq(cls_index_field_count(x), cls_index_field_count(whole));
        for (uint32_t d = 0; d < x->num_docs; d++) {
            ck_assert_uint_eq(x->doclen[d], whole->doclen[lo + d]);
            ck_assert_str_eq(cls_index_docno(x, d), cls_index_docno(whole, lo + d));
            for (uint32_t f = 0; f < cls_index_field_count(x); f++) {
                size_t la, lb;
                const char *a = cls_index_field(x, d, f, &la), *b = cls_index_field(whole, lo + d, f, &lb);
                ck_assert_msg((a == NULL) == (b == NULL) && (!a || (la == lb && memcmp(a, b, la) == 0)),
                              "shard %u document %u field %u", i, d, f);
            }
        }
        for (uint32_t t = 0; t < x->num_terms; t++) {
            size_t na, nb;
            const char *a = idx_term_text(x, t, &na), *b = idx_term_text(whole, t, &nb);
            ck_assert(na == nb && memcmp(a, b, na) == 0);
            ck_assert_uint_eq(idx_coll_df(x, t), whole->terms[t].df);
            df_sum[t] += x->terms[t].df;
        }
        postings += x->num_postings;
        tokens += x->num_tokens;
        ck_assert_msg(cls_index_check(x, 2) == CLS_OK, "shard %u: %s", i, cls_last_error());
        cls_index_close(x);
    }
    /* the shards hold every posting of the whole index, once */
    for (uint32_t t = 0; t < whole->num_terms; t++) ck_assert_uint_eq(df_sum[t], whole->terms[t].df);
    ck_assert(postings == whole->num_postings && tokens == whole->num_tokens);
    free(df_sum);
}

static void remove_set(shard_set *s)
{
    for (uint32_t i = 0; i < s->n; i++) {
        remove(s->path[i]);
        free(s->path[i]);
        s->path[i] = NULL;
    }
}

/* The sets every collection is cut into: 1 shard, 3 and 4 balanced by postings, and 4 with
 * two empty shards (one inside, one at the end). */
static int make_sets(const cls_index *whole, shard_set *sets)
{
    const uint32_t N = whole->num_docs;
    sets[0] = (shard_set){.n = 1, .bounds = {0, N}};
    sets[1] = (shard_set){.n = 3};
    sets[2] = (shard_set){.n = 4};
    ck_assert_msg(cls_index_shard_bounds(whole, 3, sets[1].bounds) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_index_shard_bounds(whole, 4, sets[2].bounds) == CLS_OK, "%s", cls_last_error());
    sets[3] = (shard_set){.n = 4, .bounds = {0, N / 3, N / 3, N, N}};
    for (int i = 1; i < 3; i++) {
        fprintf(stderr, "  %u shards by postings: documents", sets[i].n);
        for (uint32_t j = 0; j < sets[i].n; j++) fprintf(stderr, " %u..%u", sets[i].bounds[j], sets[i].bounds[j + 1]);
        fprintf(stderr, "\n");
    }
    return 4;
}

/* ---- searching and merging ------------------------------------------------------------------ */

/* Every mode at k on e: res[m] (created here). */
static void search_modes(cls_engine *e, const cls_batch *bt, uint32_t k, cls_results *res[CLS_NUM_MODES])
{
    for (int m = 0; m < CLS_NUM_MODES; m++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = k;
        p.mode = (cls_mode)m;
        ck_assert_int_eq(cls_results_create(&res[m]), CLS_OK);
        ck_assert_msg(cls_engine_search(e, bt, &p, res[m]) == CLS_OK, "%s: %s", cls_mode_name(p.mode),
                      cls_last_error());
    }
}

static void free_modes(cls_results *res[CLS_NUM_MODES])
{
    for (int m = 0; m < CLS_NUM_MODES; m++) cls_results_free(res[m]), res[m] = NULL;
}

typedef struct hit {
    uint32_t doc;
    float score;
    int tier;
} hit;

static int hit_cmp(const void *pa, const void *pb)
{
    const hit *a = pa, *b = pb;
    if (a->tier != b->tier) return a->tier > b->tier ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->doc > b->doc) - (a->doc < b->doc);
}

/* Exact equality of query q's hits in a and b. */
static void same_hits(const cls_results *a, const cls_results *b, size_t q, const char *what)
{
    size_t na, nb;
    const uint32_t *da, *db;
    const float *sa, *sb;
    cls_results_get(a, q, &na, &da, &sa);
    cls_results_get(b, q, &nb, &db, &sb);
    ck_assert_msg(na == nb, "%s, query %zu: %zu hits, %zu expected", what, q, na, nb);
    ck_assert_msg(na == 0 || (memcmp(da, db, na * 4) == 0 && memcmp(sa, sb, na * 4) == 0),
                  "%s, query %zu: hits differ", what, q);
}

/* The merge of the shards' results for query q in mode m at k (res[i][m]; AND-OR's AND hits
 * are each shard's first min(k, its AND hits) ones, res[i][CLS_MODE_AND]) against whole's, bit
 * for bit. Returns the hits compared. */
static size_t merge_equals(const shard_set *s, cls_results *res[][CLS_NUM_MODES], const cls_results *whole, size_t q,
                           int m, uint32_t k, const char *what, hit *buf)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        size_t c, ntier = 0;
        const uint32_t *d;
        const float *sc;
        if (m == CLS_MODE_AND_OR) cls_results_get(res[i][CLS_MODE_AND], q, &ntier, &d, &sc);
        cls_results_get(res[i][m], q, &c, &d, &sc);
        ck_assert(c <= k && ntier <= c);
        for (size_t j = 0; j < c; j++) buf[n++] = (hit){d[j] + s->bounds[i], sc[j], j < ntier};
    }
    qsort(buf, n, sizeof *buf, hit_cmp);
    if (n > k) n = k;
    size_t nw;
    const uint32_t *dw;
    const float *sw;
    cls_results_get(whole, q, &nw, &dw, &sw);
    ck_assert_msg(n == nw, "%s, %s k %u, query %zu: the merge has %zu hits, the whole index %zu", what,
                  cls_mode_name((cls_mode)m), k, q, n, nw);
    for (size_t j = 0; j < n; j++)
        ck_assert_msg(buf[j].doc == dw[j] && memcmp(&buf[j].score, &sw[j], 4) == 0,
                      "%s, %s k %u, query %zu, rank %zu: doc %u score %.9g, the whole index doc %u score %.9g", what,
                      cls_mode_name((cls_mode)m), k, q, j, buf[j].doc, (double)buf[j].score, dw[j], (double)sw[j]);
    return n;
}

static const uint32_t KS[] = {10, 1000};
#define NK 2

/* For the reference engine and the device: the whole index's results (the device's equal to the
 * reference engine's), and for every set, the merge of its shards' equal to them. Returns the
 * hits compared. */
static uint64_t compare_sets(const char *whole_path, const topics *tp, const shard_set *sets, int nsets,
                             const char *const *kinds, int nkinds, const char *what)
{
    cls_index *whole = open_ok(whole_path);
    cls_results *ref[NK][CLS_NUM_MODES] = {{0}};
    hit *buf = malloc(MAX_SET * 1000 * sizeof *buf);
    ck_assert(buf != NULL);
    uint64_t compared = 0;
    for (int kind = 0; kind < nkinds; kind++) {
        cls_engine *e;
        ck_assert_msg(cls_engine_create(whole, kinds[kind], &e) == CLS_OK, "%s: %s", kinds[kind], cls_last_error());
        cls_batch *bw = batch_of(whole, tp);
        cls_results *w[NK][CLS_NUM_MODES];
        for (int ki = 0; ki < NK; ki++) {
            search_modes(e, bw, KS[ki], w[ki]);
            if (!ref[ki][0]) continue;
            for (int m = 0; m < CLS_NUM_MODES; m++)
                for (size_t q = 0; q < tp->n; q++) same_hits(w[ki][m], ref[ki][m], q, "the whole index on the device");
        }
        cls_engine_free(e);
        for (int si = 0; si < nsets; si++) {
            const shard_set *s = &sets[si];
            cls_results *res[NK][MAX_SET][CLS_NUM_MODES];
            for (uint32_t i = 0; i < s->n; i++) {
                cls_index *x = open_ok(s->path[i]);
                cls_engine *xe;
                ck_assert_msg(cls_engine_create(x, kinds[kind], &xe) == CLS_OK, "%s, shard %u: %s", kinds[kind], i,
                              cls_last_error());
                cls_batch *bx = batch_of(x, tp);
                for (int ki = 0; ki < NK; ki++) search_modes(xe, bx, KS[ki], res[ki][i]);
                cls_batch_free(bx);
                cls_engine_free(xe);
                cls_index_close(x);
            }
            char label[256];
            snprintf(label, sizeof label, "%s, %u shards (set %d), %s", what, s->n, si, kinds[kind]);
            uint64_t n0 = compared;
            for (int ki = 0; ki < NK; ki++)
                for (int m = 0; m < CLS_NUM_MODES; m++)
                    for (size_t q = 0; q < tp->n; q++)
                        compared += merge_equals(s, res[ki], w[ki][m], q, m, KS[ki], label, buf);
            fprintf(stderr, "  %s: %llu hits equal the whole index's\n", label, (unsigned long long)(compared - n0));
            for (int ki = 0; ki < NK; ki++)
                for (uint32_t i = 0; i < s->n; i++) free_modes(res[ki][i]);
        }
        for (int ki = 0; ki < NK; ki++) {
            if (!ref[ki][0]) {
                memcpy(ref[ki], w[ki], sizeof ref[ki]);
            } else {
                free_modes(w[ki]);
            }
        }
        cls_batch_free(bw);
    }
    for (int ki = 0; ki < NK; ki++) free_modes(ref[ki]);
    free(buf);
    cls_index_close(whole);
    return compared;
}

/* ---- the generated collection --------------------------------------------------------------- */

static char g_index[4096], g_topics[4096];

/* 3,000 generated documents in pfor at depth 2, block size 64 (lists of many blocks, pfor's
 * list-wide width chosen again per shard), and its topics. */
static void generated(void)
{
    if (*g_index) return;
    gen_opts g;
    gen_defaults(&g);
    g.seed = 2029;
    g.num_docs = 3000;
    g.num_queries = 40;
    g.vocab_size = 4000;
    cls_build_opts b;
    cls_build_defaults(&b);
    b.codec = CLS_CODEC_PFOR;
    b.block_size = 64;
    b.pfor_depth = 2;
    snprintf(g_index, sizeof g_index, "%s", tu_tmp_path("gen.idx"));
    snprintf(g_topics, sizeof g_topics, "%s", tu_tmp_path("gen.topics"));
    ck_assert_msg(gen_index(&g, &b, g_index, g_topics) == CLS_OK, "%s", cls_last_error());
}

static void generated_done(void)
{
    if (!*g_index) return;
    remove(g_index), remove(g_topics);
    *g_index = *g_topics = '\0';
}

static void read_topics(const char *path, cls_topics_format f, const cls_index *idx, topics *t)
{
    ck_assert_msg(cls_topics_read(f, path, on_topic, t) == CLS_OK, "%s", cls_last_error());
    add_probe_queries(idx, t);
}

START_TEST(generated_merge)
{
    generated();
    cls_index *whole = open_ok(g_index);
    topics tp = {0};
    read_topics(g_topics, CLS_TOPICS_TSV, whole, &tp);
    shard_set sets[4];
    int nsets = make_sets(whole, sets);
    for (int i = 0; i < nsets; i++) write_set(whole, &sets[i], "gen.shard");
    cls_index_close(whole);
    const char *kinds[] = {"ref", tu_device()};
    uint64_t n = compare_sets(g_index, &tp, sets, nsets, kinds, 2, "generated");
    ck_assert(n > 0);
    fprintf(stderr, "generated: %llu merged hits equal the whole index's\n", (unsigned long long)n);
    for (int i = 0; i < nsets; i++) remove_set(&sets[i]);
    topics_free(&tp);
    generated_done();
}
END_TEST

/* The same on the device's other OR path: every collection by partitions, small ones, so the
 * whole index and its shards are all ranked by partitions bounded by the blocks' max_score. */
START_TEST(generated_partitions)
{
    setenv("CLSEARCH_PARAMS", "OR_DENSE_LOG=0,OR_PART_LOG=10", 1);
    generated();
    cls_index *whole = open_ok(g_index);
    topics tp = {0};
    read_topics(g_topics, CLS_TOPICS_TSV, whole, &tp);
    shard_set sets[4];
    int nsets = make_sets(whole, sets);
    for (int i = 1; i < nsets; i += 2) write_set(whole, &sets[i], "gen.shard");
    cls_index_close(whole);
    shard_set two[2] = {sets[1], sets[3]};
    const char *kinds[] = {"ref", tu_device()};
    uint64_t n = compare_sets(g_index, &tp, two, 2, kinds, 2, "generated, OR by partitions");
    ck_assert(n > 0);
    for (int i = 0; i < 2; i++) remove_set(&two[i]);
    topics_free(&tp);
    generated_done();
}
END_TEST

/* ---- balancing ------------------------------------------------------------------------------ */

START_TEST(balance)
{
    uint32_t b[6];
    const uint32_t even[] = {1, 1, 1, 1};
    idx_shard_balance(even, 4, 2, b);
    ck_assert(b[0] == 0 && b[1] == 2 && b[2] == 4);
    /* a heavy first document: the boundary nearest to half the postings is after it */
    const uint32_t heavy[] = {10, 1, 1, 1, 1};
    idx_shard_balance(heavy, 5, 2, b);
    ck_assert(b[0] == 0 && b[1] == 1 && b[2] == 5);
    /* more shards than documents: empty ranges, in order */
    const uint32_t two[] = {1, 1};
    idx_shard_balance(two, 2, 4, b);
    ck_assert(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 1 && b[4] == 2);
    /* no postings at all: by documents */
    const uint32_t none[] = {0, 0, 0, 0, 0, 0};
    idx_shard_balance(none, 6, 3, b);
    ck_assert(b[0] == 0 && b[1] == 2 && b[2] == 4 && b[3] == 6);
    /* no documents */
    idx_shard_balance(NULL, 0, 3, b);
    ck_assert(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0);

    /* a real index: each range within a document's postings of its share */
    generated();
    cls_index *x = open_ok(g_index);
    uint32_t *count = malloc((x->num_docs + 1) * sizeof *count), most = 0, bounds[8];
    ck_assert(count != NULL);
    ck_assert_int_eq(idx_doc_postings(x, count), CLS_OK);
    for (uint32_t d = 0; d < x->num_docs; d++) most = count[d] > most ? count[d] : most;
    for (uint32_t n = 1; n <= 7; n++) {
        ck_assert_int_eq(cls_index_shard_bounds(x, n, bounds), CLS_OK);
        ck_assert(bounds[0] == 0 && bounds[n] == x->num_docs);
        uint64_t at = 0;
        for (uint32_t i = 0; i < n; i++) {
            ck_assert(bounds[i] <= bounds[i + 1]);
            uint64_t p = 0;
            for (uint32_t d = bounds[i]; d < bounds[i + 1]; d++) p += count[d];
            at += p;
            double share = (double)x->num_postings / n;
            ck_assert_msg(p + 2.0 * most >= share && p <= share + 2.0 * most, "%u shards, shard %u: %llu postings, share %.0f", n,
                          i, (unsigned long long)p, share);
        }
        ck_assert(at == x->num_postings);
    }
    ck_assert_int_eq(cls_index_shard_bounds(x, 0, bounds), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_bounds(x, CLS_MAX_SHARDS + 1, bounds), CLS_E_ARG);
    free(count);
    cls_index_close(x);
    generated_done();
}
END_TEST

/* ---- stored fields, recode, arguments ------------------------------------------------------- */

/* A small built collection with stored fields: shards carry them, recoding a shard keeps it the
 * same shard (and its scores), and the writer refuses what is not a shard of a whole index. */
START_TEST(fields_recode_arguments)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    static const char *const names[] = {"title", "url"};
    ck_assert_int_eq(cls_builder_set_fields(b, names, 2), CLS_OK);
    char text[256], docno[32], title[64], url[64];
    uint64_t st = 7;
    for (uint32_t d = 0; d < 400; d++) {
        size_t len = 0;
        for (uint32_t i = 0, n = 1 + (uint32_t)(tu_rand(&st) % 12); i < n; i++)
            len += (size_t)snprintf(text + len, sizeof text - len, "w%u ", (uint32_t)(tu_rand(&st) % 60) * (d % 3 + 1));
        snprintf(docno, sizeof docno, "D%u", d);
        snprintf(title, sizeof title, "title of %u", d);
        snprintf(url, sizeof url, "u/%u", d);
        const char *fv[2] = {d % 4 == 1 ? NULL : title, d % 5 == 2 ? url : NULL};
        size_t fl[2] = {fv[0] ? strlen(fv[0]) : 0, fv[1] ? strlen(fv[1]) : 0};
        cls_doc doc = {docno, strlen(docno), text, len, 2, fv, fl};
        ck_assert_int_eq(cls_builder_add_doc(b, &doc), CLS_OK);
    }
    char *path = tu_strdup(tu_tmp_path("fields.idx"));
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    cls_builder_free(b);
    cls_index *whole = open_ok(path);
    uint32_t base = 9, coll = 9, sh = 9, shs = 9;
    ck_assert_int_eq(cls_index_shard_info(whole, &base, &coll, &sh, &shs), 0);
    ck_assert(base == 0 && coll == 400 && sh == 0 && shs == 1);
    ck_assert_int_eq(cls_index_shard_info(whole, NULL, NULL, NULL, NULL), 0);

    shard_set s = {.n = 3, .bounds = {0, 133, 250, 400}};
    write_set(whole, &s, "fields.shard"); /* fields compared document by document */

    /* recoded, a shard stays the same shard, and scores as it did */
    cls_index *x = open_ok(s.path[1]);
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = CLS_CODEC_RICE;
    o.block_size = 256;
    char *rp = tu_strdup(tu_tmp_path("fields.recoded"));
    ck_assert_msg(cls_index_recode(x, &o, rp) == CLS_OK, "%s", cls_last_error());
    cls_index *y = open_ok(rp);
    ck_assert_int_eq(cls_index_shard_info(y, &base, &coll, &sh, &shs), 1);
    ck_assert(base == 133 && coll == 400 && sh == 1 && shs == 3 && y->codec == CLS_CODEC_RICE);
    for (uint32_t t = 0; t < y->num_terms; t++)
        ck_assert(idx_coll_df(y, t) == whole->terms[t].df && y->terms[t].df == x->terms[t].df);
    ck_assert_int_eq(cls_index_check(y, 1), CLS_OK);
    topics tp = {0};
    topics_add(&tp, "1", "w1 w2 w4");
    topics_add(&tp, "2", "w3");
    topics_add(&tp, "3", "w0 w6 w9 w12 w5");
    cls_batch *bx = batch_of(x, &tp), *by = batch_of(y, &tp);
    cls_engine *ex, *ey;
    ck_assert_int_eq(cls_engine_create(x, "ref", &ex), CLS_OK);
    ck_assert_int_eq(cls_engine_create(y, "ref", &ey), CLS_OK);
    cls_results *rx[CLS_NUM_MODES], *ry[CLS_NUM_MODES];
    search_modes(ex, bx, 50, rx);
    search_modes(ey, by, 50, ry);
    for (int m = 0; m < CLS_NUM_MODES; m++)
        for (size_t q = 0; q < tp.n; q++) same_hits(ry[m], rx[m], q, "the recoded shard");
    free_modes(rx), free_modes(ry);
    cls_engine_free(ex), cls_engine_free(ey);
    cls_batch_free(bx), cls_batch_free(by);
    topics_free(&tp);

    /* what the writer refuses, writing nothing */
    char *no = tu_strdup(tu_tmp_path("refused.shard"));
    ck_assert_int_eq(cls_index_shard_write(whole, 3, 3, 0, 10, no), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_write(whole, 0, 0, 0, 10, no), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_write(whole, 0, CLS_MAX_SHARDS + 1, 0, 10, no), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_write(whole, 0, 2, 20, 10, no), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_write(whole, 0, 2, 0, 401, no), CLS_E_ARG);
    ck_assert_int_eq(cls_index_shard_write(x, 0, 2, 0, 10, no), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "shard 1 of 3 already"), "%s", cls_last_error());
    ck_assert_int_eq(cls_index_shard_write(NULL, 0, 2, 0, 10, no), CLS_E_ARG);
    /* CIFF has no place for the collection's statistics */
    ck_assert_int_eq(cls_ciff_export(x, no, NULL), CLS_E_ARG);
    ck_assert(!tu_exists(no));
    free(no);

    cls_index_close(y);
    cls_index_close(x);
    remove(rp);
    free(rp);
    remove_set(&s);
    cls_index_close(whole);
    remove(path);
    free(path);
}
END_TEST

/* ---- damage --------------------------------------------------------------------------------- */

/* Every checksum of a file image made consistent with its bytes (a forgery). */
static void rehash(unsigned char *img)
{
    idx_header h;
    idx_section_entry t[IDX_NSECTIONS];
    memcpy(&h, img, sizeof h);
    memcpy(t, img + sizeof h, sizeof t);
    for (unsigned i = 0; i < IDX_NSECTIONS; i++) {
        ck_part p = {img + t[i].offset, t[i].size};
        ck_assert_int_eq(ck_sums(&p, 1, 1, &t[i].xxh), CLS_OK);
    }
    memcpy(img + sizeof h, t, sizeof t);
    h.table_xxh = XXH64(t, sizeof t, 0);
    h.header_xxh = XXH64(&h, offsetof(idx_header, header_xxh), 0);
    memcpy(img, &h, sizeof h);
}

/* img (len bytes) written to a fresh file, opened: want's status, the message holding say. */
static void forged(const unsigned char *img, size_t len, cls_status want, const char *say, const char *what)
{
    char *p = tu_strdup(tu_tmp_path("forged.shard"));
    tu_write_file(p, img, len);
    cls_index *x = NULL;
    cls_status s = cls_index_open(p, &x);
    ck_assert_msg(s == want, "%s: status %d (%s), expected %d", what, (int)s, cls_last_error(), (int)want);
    if (say) ck_assert_msg(strstr(cls_last_error(), say), "%s: '%s' does not say '%s'", what, cls_last_error(), say);
    cls_index_close(x);
    remove(p);
    free(p);
}

static idx_term *term_at(unsigned char *img, uint32_t t)
{
    idx_section_entry e;
    memcpy(&e, img + sizeof(idx_header) + (IDX_S_TERMS - 1) * sizeof e, sizeof e);
    return (idx_term *)(img + e.offset + (uint64_t)t * sizeof(idx_term));
}

static void set_header(unsigned char *img, const idx_header *h)
{
    memcpy(img, h, sizeof *h);
}

START_TEST(damaged_shard)
{
    generated();
    cls_index *whole = open_ok(g_index);
    shard_set s = {.n = 3};
    ck_assert_int_eq(cls_index_shard_bounds(whole, 3, s.bounds), CLS_OK);
    write_set(whole, &s, "damage.shard");
    cls_index *x = open_ok(s.path[1]);
    /* a term the shard holds whose idf moves with its df: a rare one */
    uint32_t rare = UINT32_MAX;
    for (uint32_t t = 0; t < x->num_terms && rare == UINT32_MAX; t++)
        if (x->terms[t].df > 0 && x->terms[t].cdf < 20 && x->terms[t].cdf < whole->num_docs - x->num_docs) rare = t;
    ck_assert(rare != UINT32_MAX);
    uint32_t empty = UINT32_MAX; /* and one it lacks */
    for (uint32_t t = 0; t < x->num_terms && empty == UINT32_MAX; t++)
        if (x->terms[t].df == 0) empty = t;
    ck_assert(empty != UINT32_MAX);
    cls_index_close(x);
    size_t len;
    unsigned char *img = tu_read_file(s.path[1], &len), *copy = malloc(len);
    ck_assert(copy != NULL);
    idx_header h0;
    memcpy(&h0, img, sizeof h0);

    /* a postings byte: open is fine (the words are verified before they are read), check and
     * both engines refuse */
    memcpy(copy, img, len);
    idx_section_entry ws;
    memcpy(&ws, img + sizeof(idx_header) + (IDX_S_WORDS - 1) * sizeof ws, sizeof ws);
    copy[ws.offset + ws.size / 2] ^= 0x10;
    char *p = tu_strdup(tu_tmp_path("damaged.shard"));
    tu_write_file(p, copy, len);
    x = open_ok(p);
    ck_assert_int_eq(cls_index_check(x, 2), CLS_E_CORRUPT);
    cls_engine *e = NULL;
    ck_assert_int_eq(cls_engine_create(x, "ref", &e), CLS_E_CORRUPT);
    ck_assert_int_eq(cls_engine_create(x, tu_device(), &e), CLS_E_CORRUPT);
    cls_index_close(x);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", NULL, "check '%s'", p), 1);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", NULL, "check '%s'", s.path[1]), 0);

    /* a collection df moved within its bounds, checksums made good: the blocks' max_score no
     * longer match the idf (check and the device's block check refuse it) */
    memcpy(copy, img, len);
    term_at(copy, rare)->cdf += 1;
    rehash(copy);
    tu_write_file(p, copy, len);
    x = open_ok(p);
    ck_assert_int_eq(cls_index_check(x, 2), CLS_E_CORRUPT);
    ck_assert_msg(strstr(cls_last_error(), "max_score"), "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(x, tu_device(), &e), CLS_E_CORRUPT);
    ck_assert_msg(strstr(cls_last_error(), "max_score"), "%s", cls_last_error());
    cls_index_close(x);
    remove(p);
    free(p);

    /* forged fields that cannot be: refused at open */
    memcpy(copy, img, len);
    term_at(copy, rare)->cdf = term_at(copy, rare)->df - 1;
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "collection df", "a df below the list's");
    memcpy(copy, img, len);
    term_at(copy, empty)->cdf = 0;
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "collection df", "a term of no document in the collection");
    memcpy(copy, img, len);
    term_at(copy, rare)->cdf = whole->num_docs + 1;
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "collection df", "a df above the collection's documents");
    idx_header h = h0;
    h.coll_docs = h.doc_base + h.num_docs - 1;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "outside its collection", "documents past the collection");
    h = h0;
    h.coll_tokens = 1;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "tokens", "fewer collection tokens than the shard's");
    h = h0;
    h.shard = h.shards;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "shard number", "shard 3 of 3");
    h = h0;
    h.shards = 0;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "not a shard", "shard fields without a shard count");
    h = h0;
    h.reserved0 = 1;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "reserved", "a reserved word");
    /* a shard's header fields are reserved bytes in version 3 */
    h = h0;
    h.version = IDX_VERSION_V3;
    h.num_sections = IDX_NSECTIONS_V3;
    memcpy(copy, img, len);
    set_header(copy, &h);
    rehash(copy);
    forged(copy, len, CLS_E_CORRUPT, "reserved bytes", "version 3 with shard fields");

    /* a whole index's term entry keeps its fourth field zero */
    size_t wlen;
    unsigned char *wimg = tu_read_file(g_index, &wlen);
    term_at(wimg, 0)->cdf = 5;
    rehash(wimg);
    forged(wimg, wlen, CLS_E_CORRUPT, "reserved field", "a whole index with a cdf");
    free(wimg);

    free(img), free(copy);
    remove_set(&s);
    cls_index_close(whole);
    generated_done();
}
END_TEST

/* ---- the command ---------------------------------------------------------------------------- */

START_TEST(command)
{
    generated();
    const char *err;
    char out[4096], name[4200];
    snprintf(out, sizeof out, "%s", tu_tmp_path("cli"));
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 4 -o '%s' -v", g_index, out), 0);
    ck_assert_msg(strstr(err, ".3: documents"), "%s", err);
    cls_index *whole = open_ok(g_index);
    uint32_t bounds[5];
    ck_assert_int_eq(cls_index_shard_bounds(whole, 4, bounds), CLS_OK);
    for (uint32_t i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%u", out, i);
        cls_index *x = open_ok(name);
        uint32_t base, coll, sh, shs;
        ck_assert_int_eq(cls_index_shard_info(x, &base, &coll, &sh, &shs), 1);
        ck_assert(base == bounds[i] && coll == whole->num_docs && sh == i && shs == 4);
        cls_index_close(x);
        ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "check '%s'", name), 0);
    }
    /* stats shows the place */
    char *stats = tu_strdup(tu_tmp_path("stats.txt")), want[256];
    snprintf(name, sizeof name, "%s.2", out);
    ck_assert_int_eq(tu_cli(NULL, stats, &err, "stats '%s'", name), 0);
    char *text = (char *)tu_read_file(stats, NULL);
    snprintf(want, sizeof want, "shard            2 of 4: documents %u..%u of %u", bounds[2], bounds[3] - 1,
             whole->num_docs);
    ck_assert_msg(strstr(text, want), "no '%s' in:\n%s", want, text);
    free(text);
    ck_assert_int_eq(tu_cli(NULL, stats, &err, "stats --json '%s'", name), 0);
    text = (char *)tu_read_file(stats, NULL);
    snprintf(want, sizeof want, "\"shard\":{\"shard\":2,\"shards\":4,\"doc_base\":%u,\"collection_documents\":%u}",
             bounds[2], whole->num_docs);
    ck_assert_msg(strstr(text, want), "no '%s' in:\n%s", want, text);
    free(text);
    /* a whole index says nothing of shards */
    ck_assert_int_eq(tu_cli(NULL, stats, &err, "stats '%s'", g_index), 0);
    text = (char *)tu_read_file(stats, NULL);
    ck_assert(!strstr(text, "shard"));
    free(text);
    remove(stats);
    free(stats);

    /* usage errors: exit 2, nothing written */
    char bad[4096];
    snprintf(bad, sizeof bad, "%s", tu_tmp_path("bad"));
    const char *usage[] = {"-n 0", "-n 1025", "-n 3x", "-n -1", "-n", ""};
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
        ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' %s -o '%s'", g_index, usage[i], bad), 2);
        snprintf(name, sizeof name, "%s.0", bad);
        ck_assert_msg(!tu_exists(name), "shard %s wrote %s", usage[i], name);
    }
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 2", g_index), 2);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard -n 2 -o '%s'", bad), 2);
    ck_assert_int_eq(tu_cli(NULL, stats = tu_strdup(tu_tmp_path("help")), &err, "shard --help"), 0);
    text = (char *)tu_read_file(stats, NULL);
    ck_assert_msg(strstr(text, "clsearch shard INDEX -n N -o OUT"), "%s", text);
    free(text);
    remove(stats);
    free(stats);

    /* an existing file that is not an index among the outputs: refused before anything is
     * written, unless --force */
    snprintf(name, sizeof name, "%s.1", bad);
    tu_write_file(name, "not an index\n", 13);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 3 -o '%s'", g_index, bad), 1);
    ck_assert_msg(strstr(err, name), "%s", err);
    snprintf(name, sizeof name, "%s.0", bad);
    ck_assert(!tu_exists(name));
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 3 -o '%s' --force", g_index, bad), 0);
    for (uint32_t i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s.%u", bad, i);
        ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "check '%s'", name), 0);
        remove(name);
    }
    /* the index itself as an output, and a shard as the input */
    snprintf(name, sizeof name, "%s.0", out);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 1 -o '%s'", name, out), 1);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n 2 -o '%s'", name, bad), 1);
    ck_assert_msg(strstr(err, "already"), "%s", err);
    snprintf(name, sizeof name, "%s.0", bad);
    ck_assert(!tu_exists(name));
    for (uint32_t i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%u", out, i);
        remove(name);
    }
    cls_index_close(whole);
    generated_done();
}
END_TEST

/* ---- index --shards ------------------------------------------------------------------------ */

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    int same = la > 0 && la == lb && memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

/* Files in dir whose name holds ".tmp." (temporary files a command left behind). */
static int leftover_tmp(const char *dir)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '\\.tmp\\.'", dir);
    return system(cmd) == 0;
}

/* `index --shards N` writes the set that `index` then `shard -n N` writes, byte for byte (the same
 * cut, the same writer), for 1, 3 and 5 shards and two layouts; the set's merged top k is the
 * whole index's on the reference engine and on the device; bad N, outputs that may not be
 * replaced and failures at every shard leave no file of the set and no temporary file. */
START_TEST(index_shards)
{
    const char *err;
    char *dir = tu_strdup(tu_tmp_path("ixsh"));
    ck_assert(mkdir(dir, 0755) == 0);
    char corpus[4400], whole[4400], cut[4400], set[4400], a[4500], b[4500], topics_path[4400];
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "generate -o '%s' --docs 1500 --queries 30 --seed 7", dir), 0);
    snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", dir);
    snprintf(topics_path, sizeof topics_path, "%s/topics.tsv", dir);
    snprintf(whole, sizeof whole, "%s/whole.idx", dir);
    snprintf(cut, sizeof cut, "%s/cut", dir);
    snprintf(set, sizeof set, "%s/set", dir);
    const char *layouts[] = {"", "--codec pfor --block 64 --store id"};
    const uint32_t ns[] = {1, 3, 5};
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++) {
        ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -q --threads 2 -c jsonl %s -o '%s' '%s'", layouts[l],
                             whole, corpus) == 0, "%s", err);
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            const uint32_t n = ns[k];
            ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "shard '%s' -n %u -o '%s'", whole, n, cut) == 0, "%s", err);
            ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index --threads 2 --shards %u -c jsonl %s -o '%s' '%s'", n,
                                 layouts[l], set, corpus) == 0, "%s", err);
            char want[64];
            snprintf(want, sizeof want, "(%u shard%s)", n, n == 1 ? "" : "s");
            ck_assert_msg(strstr(err, want), "no '%s' in: %s", want, err);
            for (uint32_t i = 0; i < n; i++) {
                snprintf(a, sizeof a, "%s.%u", cut, i);
                snprintf(b, sizeof b, "%s.%u", set, i);
                ck_assert_msg(same_file(a, b), "%s and %s differ (layout '%s')", a, b, layouts[l]);
            }
            /* the merge of the command's shards is the whole index's top k */
            if (l == 1 && n == 3) {
                cls_index *w = open_ok(whole);
                shard_set s = {.n = n};
                ck_assert_int_eq(cls_index_shard_bounds(w, n, s.bounds), CLS_OK);
                for (uint32_t i = 0; i < n; i++) {
                    snprintf(b, sizeof b, "%s.%u", set, i);
                    s.path[i] = tu_strdup(b);
                }
                topics tp = {0};
                read_topics(topics_path, CLS_TOPICS_AUTO, w, &tp);
                cls_index_close(w);
                const char *kinds[] = {"ref", tu_device()};
                ck_assert(compare_sets(whole, &tp, &s, 1, kinds, 2, "index --shards") > 0);
                topics_free(&tp);
                for (uint32_t i = 0; i < n; i++) free(s.path[i]);
            }
            for (uint32_t i = 0; i < n; i++) {
                snprintf(a, sizeof a, "%s.%u", cut, i);
                snprintf(b, sizeof b, "%s.%u", set, i);
                remove(a), remove(b);
            }
        }
    }
    ck_assert(!leftover_tmp(dir));

    /* bad N: a usage error, nothing written */
    const char *bad[] = {"0", "1025", "3x", "-1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards '%s' -c jsonl -o '%s' '%s'", bad[i], set,
                                corpus), 2);
        ck_assert_msg(strstr(err, "--shards"), "%s", err);
        snprintf(b, sizeof b, "%s.0", set);
        ck_assert(!tu_exists(b));
    }

    /* outputs that exist: a file that is not an index among them, or a folder, is refused before
     * anything is read, and stays as it was; an existing set is replaced */
    snprintf(b, sizeof b, "%s.2", set);
    tu_write_file(b, "not an index\n", 13);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 -c jsonl -o '%s' '%s'", set, corpus), 1);
    ck_assert_msg(strstr(err, b), "%s", err);
    size_t len;
    unsigned char *text = tu_read_file(b, &len);
    ck_assert(len == 13 && memcmp(text, "not an index\n", 13) == 0);
    free(text);
    remove(b);
    snprintf(b, sizeof b, "%s.1", set);
    ck_assert(mkdir(b, 0755) == 0);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 -c jsonl -o '%s' '%s'", set, corpus), 1);
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    rmdir(b);
    snprintf(b, sizeof b, "%s.0", set);
    ck_assert(!tu_exists(b));
    ck_assert(!leftover_tmp(dir));
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 -c jsonl -o '%s' '%s'", set, corpus), 0);
    ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 --codec rice -c jsonl -o '%s' '%s'", set,
                         corpus) == 0, "%s", err);
    for (uint32_t i = 0; i < 3; i++) {
        snprintf(b, sizeof b, "%s.%u", set, i);
        cls_index *x = open_ok(b);
        ck_assert_int_eq(x->codec, CLS_CODEC_RICE);
        cls_index_close(x);
        remove(b);
    }

    /* a write that fails (a full disk, CLSEARCH_FAULT) in the whole index or in any shard: no file
     * of the set, no temporary file */
    setenv("CLSEARCH_FAULT", "count", 1);
    ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 -c jsonl -o '%s' '%s'", set, corpus), 0);
    unsigned long writes = 0;
    const char *counts = strstr(err, " write ");
    ck_assert_msg(counts && sscanf(counts, " write %lu", &writes) == 1 && writes > 3, "%s", err);
    for (uint32_t i = 0; i < 3; i++) {
        snprintf(b, sizeof b, "%s.%u", set, i);
        remove(b);
    }
    const unsigned long at[] = {1, writes / 2, writes - 1, writes};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        char fault[64];
        snprintf(fault, sizeof fault, "write:%lu", at[i]);
        setenv("CLSEARCH_FAULT", fault, 1);
        ck_assert_int_eq(tu_cli(NULL, "/dev/null", &err, "index -q --shards 3 -c jsonl -o '%s' '%s'", set, corpus), 1);
        ck_assert_msg(strstr(err, "No space left"), "%s: %s", fault, err);
        for (uint32_t j = 0; j < 3; j++) {
            snprintf(b, sizeof b, "%s.%u", set, j);
            ck_assert_msg(!tu_exists(b), "%s: %s written", fault, b);
        }
        ck_assert_msg(!leftover_tmp(dir), "%s: a temporary file left", fault);
    }
    unsetenv("CLSEARCH_FAULT");

    char cmd[4500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* A collection of 2 documents cut into 5: three empty shards, each searched. */
START_TEST(more_shards_than_documents)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "a", 1, "apple pie apple", 15), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "b", 1, "pie crust", 9), CLS_OK);
    char *path = tu_strdup(tu_tmp_path("two.idx"));
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    cls_builder_free(b);
    cls_index *whole = open_ok(path);
    shard_set s = {.n = 5};
    ck_assert_int_eq(cls_index_shard_bounds(whole, 5, s.bounds), CLS_OK);
    write_set(whole, &s, "two.shard");
    uint32_t nonempty = 0;
    for (uint32_t i = 0; i < 5; i++) nonempty += s.bounds[i + 1] > s.bounds[i];
    ck_assert_uint_eq(nonempty, 2);
    cls_index_close(whole);
    topics tp = {0};
    topics_add(&tp, "1", "apple pie");
    topics_add(&tp, "2", "crust");
    topics_add(&tp, "3", "apple crust");
    const char *kinds[] = {"ref", tu_device()};
    ck_assert(compare_sets(path, &tp, &s, 1, kinds, 2, "two documents") > 0);
    topics_free(&tp);
    remove_set(&s);
    remove(path);
    free(path);
}
END_TEST

/* ---- CACM ----------------------------------------------------------------------------------- */

START_TEST(cacm_merge)
{
    char *path = tu_strdup(tu_tmp_path("cacm.idx"));
    const char *err;
    ck_assert_msg(tu_cli(NULL, "/dev/null", &err, "index -q -c html -o '%s' '%s'", path, tu_data_path("cacm/cacm.tar.gz")) == 0,
                  "%s", err);
    cls_index *whole = open_ok(path);
    topics tp = {0};
    read_topics(tu_data_path("cacm/topics.cacm.txt"), CLS_TOPICS_AUTO, whole, &tp);
    shard_set sets[4];
    int nsets = make_sets(whole, sets);
    for (int i = 0; i < nsets; i++) write_set(whole, &sets[i], "cacm.shard");
    cls_index_close(whole);
    const char *kinds[] = {"ref", tu_device()};
    uint64_t n = compare_sets(path, &tp, sets, nsets, kinds, 2, "CACM");
    ck_assert(n > 0);
    fprintf(stderr, "CACM: %zu queries, %llu merged hits equal the whole index's\n", tp.n, (unsigned long long)n);
    for (int i = 0; i < nsets; i++) remove_set(&sets[i]);
    topics_free(&tp);
    remove(path);
    free(path);
}
END_TEST

static Suite *plain(void)
{
    Suite *s = suite_create("shard");
    TCase *tc = tcase_create("shard");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, balance);
    tcase_add_test(tc, generated_merge);
    tcase_add_test(tc, generated_partitions);
    tcase_add_test(tc, fields_recode_arguments);
    tcase_add_test(tc, damaged_shard);
    tcase_add_test(tc, command);
    tcase_add_test(tc, more_shards_than_documents);
    tcase_add_test(tc, index_shards);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data(void)
{
    Suite *s = suite_create("shard_data");
    TCase *tc = tcase_create("cacm");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, cacm_merge);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", "cacm/topics.cacm.txt", NULL};
    return tu_main(argc, argv, plain, data, needs);
}
