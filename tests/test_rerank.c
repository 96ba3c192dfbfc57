/* The second ranking stage (cls_search_params.rerank, src/engine/rerank.h): results identical bit
 * for bit on the reference engine, the host executor and the OpenCL device (POCL), replicated and
 * sharded, synchronous and submitted, in every mode at several k and depths (depth below k, depth
 * 1, the default); equal to the pipeline by hand (the first stage at the depth, the feature rows,
 * rank_model_score_rows, a sort); the first stage's scores kept beside the model's; empty queries;
 * a model that reads past the feature table and a depth out of range refused with a clear message;
 * the device executor scoring on its device (counted), a few queries a launch as well as all.
 * A search split over the host and a device, and a sharded one, are scored after the pack or the
 * merge. Models: the CACM fixtures of tests/data/ltr (tools/ltr_rerank_fixtures.sh) and one written here
 * in LightGBM's text format, of three leaves, so that most candidates tie. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/dev_engine.h"
#include "engine/rerank.h"
#include "index/index.h"
#include "query/batch.h"
#include "rank/features.h"
#include "rank/model.h"
#include "testutil.h"

static const char TINY_MODEL[] = "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
                                 "max_feature_idx=35\nobjective=lambdarank\n\n"
                                 "Tree=0\nnum_leaves=3\nnum_cat=0\nsplit_feature=33 31\nsplit_gain=1 1\n"
                                 "threshold=20.5 1.5\ndecision_type=2 2\nleft_child=1 -2\nright_child=-1 -3\n"
                                 "leaf_value=0.5 -0.25 1\nleaf_weight=1 1 1\nleaf_count=1 1 1\n"
                                 "internal_value=0 0\ninternal_weight=0 0\ninternal_count=3 3\nis_linear=0\n"
                                 "shrinkage=1\n\n"
                                 /* the stored field year, column 35 of an index that stores it */
                                 "Tree=1\nnum_leaves=2\nnum_cat=0\nsplit_feature=35\nsplit_gain=1\n"
                                 "threshold=1990.5\ndecision_type=2\nleft_child=-1\nright_child=-2\n"
                                 "leaf_value=0 0.125\nleaf_weight=1 1\nleaf_count=1 1\n"
                                 "internal_value=0\ninternal_weight=0\ninternal_count=2\nis_linear=0\n"
                                 "shrinkage=1\n\n\nend of trees\n";

static const char *ltr_path(const char *name)
{
    static char buf[4][1024];
    static int at;
    const char *src = getenv("CLS_SOURCE_DIR");
    char *p = buf[at++ % 4];
    snprintf(p, sizeof buf[0], "%s/tests/data/ltr/%s", src ? src : "..", name);
    return p;
}

/* A generated collection of n documents (words w0.. skewed to the small ones) and its index; with
 * fields, a numeric stored field "year" on most documents (a feature: field:year, column 35). */
static cls_index *collection_in(uint32_t n, int fields, cls_codec codec)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_build_opts o;
    cls_build_defaults(&o);
    o.block_size = 64;
    o.threads = 1;
    o.codec = codec;
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    static const char *const names[] = {"year"};
    if (fields) ck_assert_int_eq(cls_builder_set_fields(b, names, 1), CLS_OK);
    uint64_t st = 5;
    for (uint32_t d = 0; d < n; d++) {
        char docno[32], text[1024];
        size_t len = 0;
        uint32_t k = 1 + (uint32_t)(tu_rand(&st) % 40);
        for (uint32_t i = 0; i < k; i++) {
            double u = (double)(tu_rand(&st) % 100000) / 100000.0;
            len += (size_t)snprintf(text + len, sizeof text - len, "w%u ", (uint32_t)(u * u * 150));
        }
        snprintf(docno, sizeof docno, "D%u", d);
        char year[16];
        snprintf(year, sizeof year, "%u", 1950 + (unsigned)(tu_rand(&st) % 70));
        const char *vals[1] = {d % 7 == 3 ? NULL : year};
        size_t lens[1] = {vals[0] ? strlen(year) : 0};
        cls_doc doc = {docno, strlen(docno), text, len, fields ? 1 : 0, fields ? vals : NULL, fields ? lens : NULL};
        ck_assert_msg(cls_builder_add_doc(b, &doc) == CLS_OK, "%s", cls_last_error());
    }
    return tu_builder_open(b, "rerank.idx");
}

static cls_index *collection(uint32_t n, int fields) { return collection_in(n, fields, CLS_CODEC_BP); }

/* Queries of one to four words, an unknown word alone and an empty one among them. */
static cls_batch *queries(const cls_index *idx, uint32_t n)
{
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    uint64_t st = 9;
    for (uint32_t q = 0; q < n; q++) {
        char qid[16], text[128];
        size_t len = 0;
        snprintf(qid, sizeof qid, "%u", q);
        text[0] = '\0';
        if (q == 3) snprintf(text, sizeof text, "nosuchword");
        else if (q != 5)
            for (uint32_t i = 0, k = 1 + (uint32_t)(tu_rand(&st) % 4); i < k; i++)
                len += (size_t)snprintf(text + len, sizeof text - len, "w%u ", (uint32_t)(tu_rand(&st) % 120));
        ck_assert_msg(cls_batch_add(b, qid, text) == CLS_OK, "%s", cls_last_error());
    }
    return b;
}

static cls_model *model(const char *path)
{
    cls_model *m;
    ck_assert_msg(cls_model_load(path, &m) == CLS_OK, "%s: %s", path, cls_last_error());
    return m;
}

static cls_model *tiny_model(void)
{
    const char *path = tu_tmp_path("tiny_model.txt");
    tu_write_file(path, TINY_MODEL, strlen(TINY_MODEL));
    cls_model *m = model(path);
    remove(path);
    return m;
}

static cls_engine *engine(const cls_index *idx, const char *device, cls_placement placement)
{
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = device;
    o.placement = placement;
    cls_engine *e;
    ck_assert_msg(cls_engine_create_opts(idx, &o, &e) == CLS_OK, "%s: %s", device, cls_last_error());
    return e;
}

/* Queries whose candidates the last search scored on the device (where 1) or on the host. */
static uint64_t scored_on(const cls_engine *e, int device)
{
    const cls_counter *c;
    uint64_t v = 0;
    for (size_t i = 0, n = cls_engine_counters(e, &c); i < n; i++)
        if (strcmp(c[i].name, device ? "rerank_queries_device" : "rerank_queries_host") == 0) v += c[i].value;
    return v;
}

/* a and b the same bit for bit: counts, docIDs, scores and first-stage scores. */
static void same(const cls_results *a, const cls_results *b, const char *what)
{
    ck_assert_uint_eq(cls_results_count(a), cls_results_count(b));
    ck_assert_int_eq(cls_results_reranked(a), cls_results_reranked(b));
    for (size_t q = 0; q < cls_results_count(a); q++) {
        size_t na, nb;
        const uint32_t *da, *db;
        const float *sa, *sb, *fa, *fb;
        cls_results_get(a, q, &na, &da, &sa);
        cls_results_get(b, q, &nb, &db, &sb);
        cls_results_get_first(a, q, &na, &fa);
        cls_results_get_first(b, q, &nb, &fb);
        ck_assert_msg(na == nb, "%s: query %zu: %zu hits against %zu", what, q, na, nb);
        for (size_t j = 0; j < na; j++)
            ck_assert_msg(da[j] == db[j] && memcmp(&sa[j], &sb[j], 4) == 0 && memcmp(&fa[j], &fb[j], 4) == 0,
                          "%s: query %zu hit %zu: doc %u score %a first %a against doc %u score %a first %a", what,
                          q, j, da[j], (double)sa[j], (double)fa[j], db[j], (double)sb[j], (double)fb[j]);
    }
}

typedef struct hand_hit {
    float score, first;
    uint32_t doc;
} hand_hit;

static int hand_cmp(const void *x, const void *y)
{
    const hand_hit *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->doc < b->doc ? -1 : a->doc > b->doc;
}

/* The pipeline by hand, as `clsearch features` then `clsearch predict` then a sort: the first
 * stage at the depth on the reference engine, each candidate's feature row (SVMlight's numbering:
 * feature i at i + 1, 0 absent), the model's scores, the top k by (score desc, docID asc). */
static void by_hand(const cls_index *idx, cls_engine *ref, const cls_batch *b, const cls_search_params *p,
                    cls_results *out_first, hand_hit **out, size_t *out_n, uint64_t *start)
{
    cls_search_params p1 = *p;
    p1.rerank = NULL;
    p1.k = rerank_depth(p);
    ck_assert_int_eq(cls_engine_search(ref, b, &p1, out_first), CLS_OK);
    feat_params fp;
    feat_params_default(&fp);
    fp.k1 = p->k1;
    fp.b = p->b;
    feat_extractor *x;
    ck_assert_msg(feat_create(idx, &fp, &x) == CLS_OK, "%s", cls_last_error());
    uint32_t w = feat_count(x);
    const rank_model *m = &p->rerank->m;
    size_t total = 0, nq = cls_results_count(out_first);
    hand_hit *all = malloc((out_first->total + 1) * sizeof *all);
    ck_assert(all);
    start[0] = 0;
    for (size_t q = 0; q < nq; q++) {
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(out_first, q, &n, &docs, &scores);
        float *rows = malloc((n * w + 1) * sizeof *rows), *svm = malloc((n * (w + 1) + 1) * sizeof *svm),
              *sc = malloc((n + 1) * sizeof *sc);
        ck_assert(rows && svm && sc);
        if (n) ck_assert_int_eq(feat_query(x, b, q, docs, (uint32_t)n, rows), CLS_OK);
        for (size_t j = 0; j < n; j++) {
            svm[j * (w + 1)] = m->absent;
            memcpy(svm + j * (w + 1) + 1, rows + j * w, w * sizeof *rows);
        }
        rank_model_score_rows(m, svm, w + 1, n, sc);
        hand_hit *h = all + total;
        for (size_t j = 0; j < n; j++) h[j] = (hand_hit){sc[j], scores[j], docs[j]};
        qsort(h, n, sizeof *h, hand_cmp);
        total += n < p->k ? n : p->k;
        start[q + 1] = total;
        free(rows);
        free(svm);
        free(sc);
    }
    feat_free(x);
    *out = all;
    *out_n = total;
}

static void equals_by_hand(const cls_index *idx, cls_engine *ref, const cls_batch *b, const cls_search_params *p,
                           const cls_results *r, const char *what)
{
    cls_results *first;
    ck_assert_int_eq(cls_results_create(&first), CLS_OK);
    size_t nq = cls_batch_count(b), n;
    uint64_t *start = malloc((nq + 1) * sizeof *start);
    hand_hit *h;
    size_t total;
    by_hand(idx, ref, b, p, first, &h, &total, start);
    for (size_t q = 0; q < nq; q++) {
        const uint32_t *docs;
        const float *scores, *fs;
        cls_results_get(r, q, &n, &docs, &scores);
        cls_results_get_first(r, q, &n, &fs);
        ck_assert_msg(n == start[q + 1] - start[q], "%s: query %zu: %zu hits, by hand %llu", what, q, n,
                      (unsigned long long)(start[q + 1] - start[q]));
        for (size_t j = 0; j < n; j++) {
            const hand_hit *w = &h[start[q] + j];
            ck_assert_msg(docs[j] == w->doc && memcmp(&scores[j], &w->score, 4) == 0 &&
                              memcmp(&fs[j], &w->first, 4) == 0,
                          "%s: query %zu hit %zu: doc %u score %a first %a, by hand doc %u score %a first %a", what, q,
                          j, docs[j], (double)scores[j], (double)fs[j], w->doc, (double)w->score, (double)w->first);
        }
    }
    free(start);
    free(h);
    cls_results_free(first);
}

/* Every executor, every mode, several (k, depth): the same bits, and the pipeline by hand. */
START_TEST(identical_on_every_executor)
{
    cls_index *idx = collection(3000, 1);
    cls_batch *b = queries(idx, 40);
    cls_model *models[3] = {model(ltr_path("cacm_lgb.txt")), model(ltr_path("cacm_xgb.json")), tiny_model()};
    const char *devices[4] = {"ref", "host:2", tu_device(), tu_device()};
    cls_engine *eng[4];
    for (int i = 0; i < 4; i++) eng[i] = engine(idx, devices[i], CLS_PLACEMENT_AUTO);
    /* the fourth: the device scoring a few queries' candidates a launch */
    clx_set_rerank_chunk(engine_clx(eng[3]), 50);
    cls_results *r[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(cls_results_create(&r[i]), CLS_OK);
    static const uint32_t kd[][2] = {{10, 100}, {50, 20}, {5, 1}, {20, 0}};
    static const cls_mode modes[] = {CLS_MODE_OR, CLS_MODE_AND, CLS_MODE_AND_OR};
    for (int mi = 0; mi < 3; mi++)
        for (size_t md = 0; md < sizeof modes / sizeof *modes; md++)
            for (size_t c = 0; c < sizeof kd / sizeof *kd; c++) {
                cls_search_params p;
                cls_search_defaults(&p);
                p.mode = modes[md];
                p.k = kd[c][0];
                p.rerank_depth = kd[c][1];
                p.rerank = models[mi];
                if (c == 3) p.k1 = 1.2f, p.b = 0.75f; /* the features follow the search's BM25 */
                char what[160];
                for (int i = 0; i < 4; i++) {
                    snprintf(what, sizeof what, "model %d %s k %u depth %u on %s", mi, cls_mode_name(p.mode), p.k,
                             p.rerank_depth, devices[i]);
                    ck_assert_msg(cls_engine_search(eng[i], b, &p, r[i]) == CLS_OK, "%s: %s", what, cls_last_error());
                    ck_assert(cls_results_reranked(r[i]));
                    if (i) same(r[0], r[i], what);
                    /* the device executor scored on its device (POCL divides correctly), the
                     * others on the host */
                    ck_assert_msg(scored_on(eng[i], i >= 2) == cls_batch_count(b) && scored_on(eng[i], i < 2) == 0,
                                  "%s: scored on the device %llu, on the host %llu", what,
                                  (unsigned long long)scored_on(eng[i], 1), (unsigned long long)scored_on(eng[i], 0));
                }
                equals_by_hand(idx, eng[0], b, &p, r[0], what);
                /* the empty queries have no hits; depth below k keeps depth */
                size_t n;
                cls_results_get(r[0], 3, &n, NULL, NULL);
                ck_assert_uint_eq(n, 0);
                cls_results_get(r[0], 5, &n, NULL, NULL);
                ck_assert_uint_eq(n, 0);
                uint32_t depth = p.rerank_depth ? p.rerank_depth : CLS_RERANK_DEPTH;
                for (size_t q = 0; q < cls_results_count(r[0]); q++) {
                    cls_results_get(r[0], q, &n, NULL, NULL);
                    ck_assert_uint_le(n, depth < p.k ? depth : p.k);
                }
            }
    for (int i = 0; i < 4; i++) {
        cls_results_free(r[i]);
        cls_engine_free(eng[i]);
        if (i < 3) cls_model_free(models[i]);
    }
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* A device engine whose batches aim at 1 us (after the first, as few queries as its floor), or
 * whose lists are cached in a third of their size (device_mem) rather than resident. */
static cls_engine *device_engine(const cls_index *idx, double batch_ms, int cached)
{
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = tu_device();
    o.batch_ms = batch_ms;
    if (cached) {
        uint64_t lists = idx->num_words * 4 + idx->num_blocks * sizeof(idx_block), norms = ((uint64_t)idx->num_docs + 1) * 4;
        o.device_mem = 2 * (norms + lists / 3) + (32 << 10);
    }
    cls_engine *e;
    ck_assert_msg(cls_engine_create_opts(idx, &o, &e) == CLS_OK, "%s", cls_last_error());
    return e;
}

/* Whether the last search ran the stage's kernels in the device's batches: its profile's steps. */
static int ran_in_batches(const cls_engine *e)
{
    static const char *const kernels[] = {"rerank tf", "features", "trees", "rerank order"};
    const cls_profile_step *st;
    size_t n = cls_engine_profile(e, &st, NULL), found = 0;
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(st[i].name, kernels[k]) == 0 && !st[i].transfer) {
                found++;
                break;
            }
    return found == 4;
}

/* The device executor runs the stage in its batches, after top-k (the profile names its kernels,
 * -v says so), on indexes of several codecs, in OR, AND and AND-OR: the reference engine's bits,
 * whether a batch's queries make one chunk of rows or one query a chunk, one batch or many. Lists
 * cached on the device (not resident) leave the stage to the host, and -v says why. */
START_TEST(in_the_batches)
{
    static const cls_codec codecs[] = {CLS_CODEC_BP, CLS_CODEC_PFOR};
    for (size_t ci = 0; ci < sizeof codecs / sizeof *codecs; ci++) {
        cls_index *idx = collection_in(2500, 1, codecs[ci]);
        cls_batch *b = queries(idx, 60);
        cls_model *models[2] = {model(ltr_path("cacm_xgb.json")), tiny_model()};
        cls_engine *ref = engine(idx, "ref", CLS_PLACEMENT_AUTO), *dev = device_engine(idx, 0, 0),
                   *many = device_engine(idx, 0.001, 0), *cached = device_engine(idx, 0, 1);
        ck_assert_msg(strstr(cls_engine_describe(dev), "rerank=in each batch after top-k"), "%s",
                      cls_engine_describe(dev));
        ck_assert_msg(strstr(cls_engine_describe(cached), "rerank=the lists are cached on the device"), "%s",
                      cls_engine_describe(cached));
        clx_set_batch_floor(engine_clx(many), 7);
        clx_set_rerank_chunk(engine_clx(many), 1); /* one query a chunk */
        cls_results *want, *got;
        ck_assert_int_eq(cls_results_create(&want), CLS_OK);
        ck_assert_int_eq(cls_results_create(&got), CLS_OK);
        static const uint32_t kd[][2] = {{10, 100}, {30, 30}, {7, 0}};
        static const cls_mode modes[] = {CLS_MODE_OR, CLS_MODE_AND, CLS_MODE_AND_OR};
        uint32_t most_batches = 0;
        for (int mi = 0; mi < 2; mi++)
            for (size_t md = 0; md < sizeof modes / sizeof *modes; md++)
                for (size_t c = 0; c < sizeof kd / sizeof *kd; c++) {
                    cls_search_params p;
                    cls_search_defaults(&p);
                    p.mode = modes[md];
                    p.k = kd[c][0];
                    p.rerank_depth = kd[c][1];
                    p.rerank = models[mi];
                    char what[160];
                    snprintf(what, sizeof what, "%s model %d %s k %u depth %u", cls_codec_name(codecs[ci]), mi,
                             cls_mode_name(p.mode), p.k, p.rerank_depth);
                    ck_assert_msg(cls_engine_search(ref, b, &p, want) == CLS_OK, "%s: %s", what, cls_last_error());
                    cls_engine *devs[3] = {dev, many, cached};
                    for (int i = 0; i < 3; i++) {
                        ck_assert_msg(cls_engine_search(devs[i], b, &p, got) == CLS_OK, "%s (%d): %s", what, i,
                                      cls_last_error());
                        same(want, got, what);
                        ck_assert_msg(ran_in_batches(devs[i]) == (i < 2), "%s (%d): the stage's kernels", what, i);
                        ck_assert_uint_eq(scored_on(devs[i], i < 2), cls_batch_count(b));
                    }
                    uint32_t batches;
                    const cls_profile_step *st;
                    cls_engine_profile(many, &st, &batches);
                    if (batches > most_batches) most_batches = batches;
                }
        ck_assert_uint_gt(most_batches, 1);
        cls_results_free(want);
        cls_results_free(got);
        cls_engine_free(ref);
        cls_engine_free(dev);
        cls_engine_free(many);
        cls_engine_free(cached);
        cls_model_free(models[0]);
        cls_model_free(models[1]);
        cls_batch_free(b);
        cls_index_close(idx);
    }
}
END_TEST

/* Submitted searches and a sharded device pair end in the same stage: the same bits as the
 * reference engine's; a results object reused by a search without the stage holds no first
 * scores of its own. */
START_TEST(submitted_and_sharded)
{
    cls_index *idx = collection(2000, 0);
    cls_batch *b = queries(idx, 30);
    cls_model *m = model(ltr_path("cacm_lgb.txt"));
    char pair[64];
    snprintf(pair, sizeof pair, "%s,%s", tu_device(), tu_device());
    char mixed[64];
    snprintf(mixed, sizeof mixed, "host:1,%s", tu_device());
    cls_engine *ref = engine(idx, "ref", CLS_PLACEMENT_AUTO), *sh = engine(idx, pair, CLS_PLACEMENT_SHARD),
               *host = engine(idx, "host:2", CLS_PLACEMENT_AUTO), *split = engine(idx, mixed, CLS_PLACEMENT_AUTO);
    sched_set_split_min(engine_sched(split), 1); /* every search split over the host and the device */
    sched_set_split_always(engine_sched(split), 1);
    cls_results *want, *got;
    ck_assert_int_eq(cls_results_create(&want), CLS_OK);
    ck_assert_int_eq(cls_results_create(&got), CLS_OK);
    static const cls_mode modes[] = {CLS_MODE_OR, CLS_MODE_AND, CLS_MODE_AND_OR};
    for (size_t md = 0; md < 3; md++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.mode = modes[md];
        p.k = 15;
        p.rerank_depth = 80;
        p.rerank = m;
        ck_assert_int_eq(cls_engine_search(ref, b, &p, want), CLS_OK);
        ck_assert_msg(cls_engine_search(sh, b, &p, got) == CLS_OK, "%s", cls_last_error());
        same(want, got, "sharded");
        /* a sharded search is scored after the merge, on the host */
        ck_assert_uint_eq(scored_on(sh, 0), cls_batch_count(b));
        /* a split search: its parts packed, then scored on the host */
        ck_assert_msg(cls_engine_search(split, b, &p, got) == CLS_OK, "%s", cls_last_error());
        same(want, got, "split");
        ck_assert_uint_eq(scored_on(split, 0), cls_batch_count(b));
        const cls_counter *c;
        uint64_t shares = 0;
        for (size_t i = 0, n = cls_engine_counters(split, &c); i < n; i++)
            if (strncmp(c[i].name, "device_", 7) == 0 && c[i].value > 0) shares++;
        ck_assert_uint_eq(shares, 2);
        cls_search *s;
        ck_assert_int_eq(cls_engine_submit(host, b, &p, got, &s), CLS_OK);
        ck_assert_int_eq(cls_search_wait(s), CLS_OK);
        cls_search_free(s);
        same(want, got, "submitted");
    }
    /* the same results object, no stage: the first scores are the scores */
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = 10;
    ck_assert_int_eq(cls_engine_search(host, b, &p, got), CLS_OK);
    ck_assert(!cls_results_reranked(got));
    size_t n, n2;
    const float *s, *f;
    cls_results_get(got, 0, &n, NULL, &s);
    cls_results_get_first(got, 0, &n2, &f);
    ck_assert_uint_eq(n, n2);
    ck_assert_ptr_eq(s, f);
    cls_results_free(want);
    cls_results_free(got);
    cls_engine_free(ref);
    cls_engine_free(sh);
    cls_engine_free(host);
    cls_engine_free(split);
    cls_model_free(m);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* A model that reads past the table, a depth out of range: CLS_E_ARG with a message that says
 * what; a file that is no model: CLS_E_FORMAT or CLS_E_IO naming it. */
START_TEST(refusals)
{
    cls_index *idx = collection(300, 0);
    cls_batch *b = queries(idx, 4);
    cls_model *wide = model(ltr_path("lgb_reg.txt")), *ok = model(ltr_path("cacm_lgb.txt")), *tiny = tiny_model();
    ck_assert_uint_eq(cls_model_features(wide), 301);
    ck_assert_uint_eq(cls_model_features(tiny), 36);
    ck_assert_ptr_nonnull(strstr(cls_model_describe(ok), "LightGBM"));
    const char *devices[3] = {"ref", "host:2", tu_device()};
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    for (int i = 0; i < 3; i++) {
        cls_engine *e = engine(idx, devices[i], CLS_PLACEMENT_AUTO);
        cls_search_params p;
        cls_search_defaults(&p);
        p.rerank = wide;
        ck_assert_int_eq(cls_engine_search(e, b, &p, r), CLS_E_ARG);
        ck_assert_msg(strstr(cls_last_error(), "reads feature 300") && strstr(cls_last_error(), "feature table has 34"),
                      "%s", cls_last_error());
        ck_assert_int_eq(cls_engine_search_text(e, "w1", &p, r), CLS_E_ARG);
        /* a model of the stored field on an index without it */
        p.rerank = tiny;
        ck_assert_int_eq(cls_engine_search(e, b, &p, r), CLS_E_ARG);
        ck_assert_msg(strstr(cls_last_error(), "reads feature 35"), "%s", cls_last_error());
        p.rerank = ok;
        p.rerank_depth = CLS_MAX_K + 1;
        ck_assert_int_eq(cls_engine_search(e, b, &p, r), CLS_E_ARG);
        ck_assert_msg(strstr(cls_last_error(), "rerank depth"), "%s", cls_last_error());
        p.rerank_depth = CLS_MAX_K;
        ck_assert_msg(cls_engine_search(e, b, &p, r) == CLS_OK, "%s", cls_last_error());
        cls_engine_free(e);
    }
    cls_model *m;
    ck_assert_int_eq(cls_model_load(tu_tmp_path("absent-model"), &m), CLS_E_IO);
    const char *junk = tu_tmp_path("junk-model");
    tu_write_file(junk, "not a model\n", 12);
    ck_assert_int_eq(cls_model_load(junk, &m), CLS_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "junk-model"));
    remove(junk);
    ck_assert_int_eq(cls_model_load(NULL, &m), CLS_E_ARG);
    cls_results_free(r);
    cls_model_free(wide);
    cls_model_free(ok);
    cls_model_free(tiny);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("rerank");
    TCase *tc = tcase_create("rerank");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, identical_on_every_executor);
    tcase_add_test(tc, in_the_batches);
    tcase_add_test(tc, submitted_and_sharded);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return tu_main(argc, argv, plain_suite, NULL, NULL); }
