/* The query algorithms (src/algo/algos.c), each on the OpenCL device ($CLS_TEST_DEVICE, default
 * POCL's CPU device) against its plain-C reference twin: same docIDs in the same order, same
 * scores bit for bit, never an empty comparison. Then what only some algorithms promise (and-or:
 * AND first, completed by OR), and the batch planner: device batches cut small by the byte
 * budget and the query limit give the same results, and the plan itself respects its limits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/clx.h"
#include "device/dev.h"
#include "index/bm25.h"
#include "index/index.h"
#include "algo/algo.h"
#include "algo/and.h"
#include "algo/or.h"
#include "engine/dev_engine.h"
#include "engine/cost_model.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "testutil.h"
#include "util/fault.h"

/* An index of ndocs documents, document d's text written by text_of (its length returned),
 * built with block size 64 so lists span blocks. */
typedef size_t (*doc_text_fn)(void *ctx, uint32_t d, char *text, size_t cap);
static cls_index *built_index(uint32_t ndocs, doc_text_fn text_of, void *ctx)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_build_opts o;
    cls_build_defaults(&o);
    o.block_size = 64;
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_configure(b, &o), CLS_OK);
    char text[2048], docno[32];
    for (uint32_t d = 0; d < ndocs; d++) {
        size_t len = text_of(ctx, d, text, sizeof text);
        snprintf(docno, sizeof docno, "D%u", d);
        ck_assert_int_eq(cls_builder_add(b, docno, strlen(docno), text, len), CLS_OK);
    }
    return tu_builder_open(b, "query.idx");
}

typedef struct random_docs {
    uint64_t st;
    uint32_t vocab;
} random_docs;

static size_t random_doc(void *ctx, uint32_t d, char *text, size_t cap)
{
    random_docs *r = ctx;
    if (d % 5 == 2) return (size_t)snprintf(text, cap, "w1 w2 w3");
    size_t len = 0;
    uint32_t n = 1 + (uint32_t)(tu_rand(&r->st) % 30);
    for (uint32_t i = 0; i < n; i++) {
        double u = (double)(tu_rand(&r->st) % 100000) / 100000.0;
        len += (size_t)snprintf(text + len, cap - len, "w%u ", (uint32_t)(u * u * r->vocab));
    }
    return len;
}

/* A collection of ndocs random documents over words w0..w{vocab-1}, small ids far more
 * frequent (lists from one posting to many blocks), every 5th document a clone of "w1 w2 w3"
 * (equal scores: the docID tie-break), built with block size 64 so lists span blocks. */
static cls_index *random_index(uint64_t seed, uint32_t ndocs, uint32_t vocab)
{
    random_docs r = {seed, vocab};
    return built_index(ndocs, random_doc, &r);
}

/* Edge cases first (no term, unknown terms only, known + unknown, repeated terms, a term in every
 * clone, weighted terms: term^w, repeats adding weights), then nq random queries of 1 to 6 terms. */
static cls_batch *random_queries(const cls_index *idx, uint64_t seed, uint32_t nq, uint32_t vocab)
{
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    const char *fixed[] = {"", "nosuchterm", "w1 nosuchterm", "w1 w1 w2", "w1 w2 w3", "w3 w2 w1", "w0", "w2 w5 w9",
                           "w1^2.5 w2", "w3^0.25 w2^4 w1", "w1 w1^0.5 w7^1e1", "w0^3", "w2^.75", "w5^1.5 w5^1.5 w9",
                           "nosuchterm^2 w4^0.1"};
    char qid[32], text[256];
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        snprintf(qid, sizeof qid, "f%zu", i);
        ck_assert_int_eq(cls_batch_add(b, qid, fixed[i]), CLS_OK);
    }
    uint64_t st = seed;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t n = 1 + (uint32_t)(tu_rand(&st) % 6);
        size_t len = 0;
        for (uint32_t i = 0; i < n; i++) {
            double u = (double)(tu_rand(&st) % 100000) / 100000.0;
            len += (size_t)snprintf(text + len, sizeof text - len, "w%u ", (uint32_t)(u * u * vocab));
        }
        snprintf(qid, sizeof qid, "q%u", q);
        ck_assert_int_eq(cls_batch_add(b, qid, text), CLS_OK);
    }
    return b;
}

static cls_results *search(cls_engine *e, const cls_batch *b, cls_mode mode, uint32_t k)
{
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = k;
    p.mode = mode;
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    ck_assert_msg(cls_engine_search(e, b, &p, r) == CLS_OK, "%s k %u: %s", cls_mode_name(mode), k, cls_last_error());
    return r;
}

/* The device's results equal the reference's exactly, and the reference found something. */
static void same_as_ref(cls_engine *dev, cls_engine *ref, const cls_batch *b, cls_mode mode, uint32_t k)
{
    cls_results *rr = search(ref, b, mode, k), *rd = search(dev, b, mode, k);
    size_t n = cls_results_count(rr), hits = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m;
        const uint32_t *d;
        const float *s;
        cls_results_get(rr, i, &m, &d, &s);
        hits += m;
    }
    ck_assert_msg(n == cls_batch_count(b) && hits > 0, "%s k %u: the reference found nothing", cls_mode_name(mode), k);
    ck_assert_msg(cls_results_compare(rr, rd, 0.0) == CLS_OK, "%s k %u: %s", cls_mode_name(mode), k, cls_last_error());
    cls_results_free(rr);
    cls_results_free(rd);
}

/* The same at other search parameters (k1 and b), the reference's results not empty. */
static void same_as_ref_mode(cls_engine *dev, cls_engine *ref, const cls_batch *b, cls_mode mode, uint32_t k, float k1,
                             float bb)
{
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = k;
    p.mode = mode;
    p.k1 = k1;
    p.b = bb;
    cls_results *rr, *rd;
    ck_assert_int_eq(cls_results_create(&rr), CLS_OK);
    ck_assert_int_eq(cls_results_create(&rd), CLS_OK);
    ck_assert_msg(cls_engine_search(ref, b, &p, rr) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(cls_engine_search(dev, b, &p, rd) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_gt(cls_results_count(rr), 0);
    ck_assert_msg(cls_results_compare(rr, rd, 0.0) == CLS_OK, "%s k %u, k1 %g, b %g: %s", cls_mode_name(mode), k, k1, bb,
                  cls_last_error());
    cls_results_free(rr);
    cls_results_free(rd);
}

/* A random collection, queries over it, and the device and reference engines on it. */
typedef struct fixture {
    cls_index *idx;
    cls_batch *b;
    cls_engine *dev, *ref;
} fixture;

static fixture fixture_open(uint64_t seed, uint32_t ndocs, uint32_t vocab, uint64_t qseed, uint32_t nq)
{
    fixture f;
    f.idx = random_index(seed, ndocs, vocab);
    f.b = random_queries(f.idx, qseed, nq, vocab);
    ck_assert_msg(cls_engine_create(f.idx, tu_device(), &f.dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(f.idx, "ref", &f.ref), CLS_OK);
    return f;
}

static void fixture_close(fixture *f)
{
    cls_engine_free(f->dev);
    cls_engine_free(f->ref);
    cls_batch_free(f->b);
    cls_index_close(f->idx);
}

/* ---- every algorithm of the table --------------------------------------------------------- */

/* The candidates per work unit of every algorithm that intersects (AND and and-or): a long
 * query's intersection spread over many work-groups. */
static void set_chunk(cls_engine *e, uint32_t candidates)
{
    and_set_chunk(clx_algo_state(engine_clx(e), CLS_MODE_AND), candidates);
    and_set_chunk(clx_algo_state(engine_clx(e), CLS_MODE_AND_OR), candidates);
}

START_TEST(each_algorithm_matches_its_reference)
{
    size_t nalgo;
    const query_algo *const *algos = query_algos(&nalgo);
    ck_assert_int_eq(nalgo, CLS_NUM_MODES);
    const query_algo *a = algos[_i];
    ck_assert_ptr_eq(query_algo_for(_i), a);
    ck_assert_str_eq(cls_mode_name((cls_mode)_i), a->name);
    cls_mode m;
    ck_assert_int_eq(cls_mode_parse(a->name, &m), CLS_OK);
    ck_assert_int_eq((int)m, _i);

    fixture f = fixture_open(11 + (uint64_t)_i, 3000, 400, 7 + (uint64_t)_i, 200);
    const uint32_t ks[] = {1, 10, 1000, 5000}; /* 5000: k beyond the collection */
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) same_as_ref(f.dev, f.ref, f.b, (cls_mode)_i, ks[i]);
    fixture_close(&f);
}
END_TEST

START_TEST(unknown_mode_is_refused)
{
    cls_index *idx = random_index(3, 50, 20);
    cls_batch *b = random_queries(idx, 3, 2, 20);
    cls_engine *ref;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_search_params p;
    cls_search_defaults(&p);
    p.mode = (cls_mode)CLS_NUM_MODES;
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    ck_assert_int_eq(cls_engine_search(ref, b, &p, r), CLS_E_ARG);
    cls_mode m;
    ck_assert_int_eq(cls_mode_parse("xor", &m), CLS_E_ARG);
    ck_assert_ptr_null(cls_mode_name((cls_mode)CLS_NUM_MODES));
    cls_results_free(r);
    cls_engine_free(ref);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* ---- and: block skipping ---------------------------------------------------------------------- */

static uint64_t counter(cls_engine *e, const char *name)
{
    const cls_counter *c;
    size_t n = cls_engine_counters(e, &c);
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return c[i].value;
    ck_abort_msg("no counter %s", name);
    return 0;
}

/* A finished search's own counter (cls_search_counters). */
static uint64_t counter_of(const cls_search *j, const char *name)
{
    const cls_counter *c;
    size_t n = cls_search_counters(j, &c);
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return c[i].value;
    ck_abort_msg("no counter %s", name);
    return 0;
}

/* ---- the host executor ---------------------------------------------------------------------- */

/* The host executor (-d host) equals the reference engine in every mode, from k 1 to beyond the
 * collection, on one thread and on several, at the blocks' BM25 parameters (bounds prune) and at
 * others (every candidate scored); on a collection of few words (long lists, many blocks) its
 * bounds leave most postings unscored at k 10 and the results are still the reference's. A host
 * spec of no or too many threads is refused. */
START_TEST(host_matches_reference)
{
    fixture f = fixture_open(41, 6000, 300, 13, 300);
    const char *specs[] = {"host:1", "host:3", "host"};
    const uint32_t ks[] = {1, 10, 1000, 7000};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        cls_engine *h;
        ck_assert_msg(cls_engine_create(f.idx, specs[i], &h) == CLS_OK, "%s: %s", specs[i], cls_last_error());
        ck_assert_msg(strstr(cls_engine_describe(h), "host executor"), "%s", cls_engine_describe(h));
        for (int md = 0; md < CLS_NUM_MODES; md++)
            for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
                same_as_ref(h, f.ref, f.b, (cls_mode)md, ks[j]);
                if (j == 1 || j == 2) same_as_ref_mode(h, f.ref, f.b, (cls_mode)md, ks[j], 1.2f, 0.75f);
            }
        ck_assert_uint_eq(counter(h, "queries"), cls_batch_count(f.b));
        cls_engine_free(h);
    }
    const char *bad[] = {"host:0", "host:", "host:x", "host:1025", "host:-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cls_engine *e = NULL;
        ck_assert_msg(cls_engine_create(f.idx, bad[i], &e) == CLS_E_ARG, "%s accepted", bad[i]);
        ck_assert_ptr_null(e);
        ck_assert_msg(strstr(cls_last_error(), bad[i]), "%s: %s", bad[i], cls_last_error());
    }
    fixture_close(&f);

    cls_index *idx = random_index(43, 20000, 12);
    cls_batch *b = random_queries(idx, 17, 120, 12);
    cls_engine *h, *ref;
    ck_assert_msg(cls_engine_create(idx, "host:2", &h) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    for (int md = 0; md < CLS_NUM_MODES; md++) {
        same_as_ref_mode(h, ref, b, (cls_mode)md, 10, 1.2f, 0.75f); /* no bounds: every candidate */
        uint64_t all = counter(h, "postings_scored");
        same_as_ref(h, ref, b, (cls_mode)md, 10);
        uint64_t pruned = counter(h, "postings_scored");
        ck_assert_msg(pruned * 2 < all, "%s: %llu postings scored with bounds, %llu without", cls_mode_name((cls_mode)md),
                      (unsigned long long)pruned, (unsigned long long)all);
        same_as_ref(h, ref, b, (cls_mode)md, 100);
    }
    cls_engine_free(h);
    cls_engine_free(ref);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* A rare term with common ones: the common lists span many blocks, few of which can hold the
 * rare term's documents, so the device decodes fewer blocks than the lists hold, and the results
 * are still the reference's. Without a rare term (two common lists) nothing may be lost either. */
START_TEST(and_skips_blocks)
{
    cls_index *idx = random_index(17, 6000, 400);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    const char *q[] = {"w0 w300", "w1 w350 w2", "w0 w1", "w0 w1 w2 w3", "w3 w390", "w2 w399 w0"};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        char qid[16];
        snprintf(qid, sizeof qid, "s%zu", i);
        ck_assert_int_eq(cls_batch_add(b, qid, q[i]), CLS_OK);
    }
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    const uint32_t ks[] = {1, 10, 1000};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        same_as_ref(dev, ref, b, CLS_MODE_AND, ks[i]);
        uint64_t in_lists = counter(dev, "blocks_in_lists"), decoded = counter(dev, "blocks_decoded");
        ck_assert_uint_eq(counter(dev, "queries"), cls_batch_count(b));
        ck_assert_msg(decoded < in_lists, "k %u: %llu blocks decoded of %llu: nothing skipped", ks[i],
                      (unsigned long long)decoded, (unsigned long long)in_lists);
    }
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* ---- and-or: AND first, then OR --------------------------------------------------------------- */

/* Whether doc is among query i's hits of r. */
static int holds(const cls_results *r, size_t i, uint32_t doc)
{
    size_t n;
    const uint32_t *d;
    const float *s;
    cls_results_get(r, i, &n, &d, &s);
    for (size_t j = 0; j < n; j++)
        if (d[j] == doc) return 1;
    return 0;
}

/* Block-max pruning: one-term AND queries on lists of many blocks decode only the blocks whose
 * max_score can reach the top k, and still give the reference's results: long lists, the
 * clones' ties (equal scores across many blocks, the docID deciding at the boundary), a repeated
 * term (a weight the blocks' max_score was not computed for), k below, near and above the
 * list's blocks, work units of a few postings; at other BM25 parameters nothing is pruned. */

static void same_as_ref_at(cls_engine *dev, cls_engine *ref, const cls_batch *b, uint32_t k, float k1, float bb)
{
    same_as_ref_mode(dev, ref, b, CLS_MODE_AND, k, k1, bb);
}

START_TEST(and_prunes_one_term_queries)
{
    cls_index *idx = random_index(31, 9000, 300);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    const char *q[] = {"w0", "w1", "w2", "w3", "w1 w1", "w5", "w9", "w40", "w0 w1", "nosuchterm", "w2 w2 w2",
                       "w1^2.5", "w3^0.3", "w2 w2^0.5"};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        char qid[16];
        snprintf(qid, sizeof qid, "p%zu", i);
        ck_assert_int_eq(cls_batch_add(b, qid, q[i]), CLS_OK);
    }
    uint32_t w1 = idx_lookup(idx, "w1", 2);
    ck_assert_uint_ne(w1, UINT32_MAX);
    ck_assert_uint_gt(idx->terms[w1].num_blocks, 20); /* the clones alone fill 28 blocks of 64 */
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    const uint32_t ks[] = {1, 3, 10, 27, 64, 200, 5000};
    const uint32_t chunks[] = {0, 5};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        if (chunks[c]) set_chunk(dev, chunks[c]);
        for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
            same_as_ref(dev, ref, b, CLS_MODE_AND, ks[i]);
            uint64_t pruned = counter(dev, "queries_pruned");
            if (ks[i] <= 10) {
                ck_assert_msg(pruned >= 6, "k %u: %llu queries pruned", ks[i], (unsigned long long)pruned);
                ck_assert_uint_lt(counter(dev, "blocks_decoded") * 2, counter(dev, "blocks_in_lists"));
            }
            if (ks[i] == 5000) ck_assert_uint_eq(pruned, 0); /* more hits than any list has blocks */
        }
    }
    same_as_ref_at(dev, ref, b, 10, 1.2f, 0.75f);
    ck_assert_uint_eq(counter(dev, "queries_pruned"), 0);
    same_as_ref_at(dev, ref, b, 10, 0.9f, 0.4f);
    ck_assert_uint_gt(counter(dev, "queries_pruned"), 0);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* block_maxima (cl/or_parts.cl), the table OR's partitions bound blocks by when k1 and b are not
 * the index's: every block's entry equals its largest contribution at weight 1 under k1 and b,
 * computed here with the reference decoder, bit for bit. */
static void check_block_maxima(cls_engine *e, const cls_index *idx, float k1, float b)
{
    clx_engine *x = engine_clx(e);
    const or_state *os = clx_algo_state(x, CLS_MODE_OR);
    ck_assert(os->bmax_k1 == k1 && os->bmax_b == b);
    uint64_t nb = idx->num_blocks;
    float *dev = malloc(nb * sizeof *dev), *norms = malloc(((size_t)idx->num_docs + 1) * sizeof *norms);
    uint32_t *docs = malloc(idx->block_size * sizeof *docs), *tfs = malloc(idx->block_size * sizeof *tfs);
    ck_assert(dev && norms && docs && tfs);
    ck_assert_int_eq(clEnqueueReadBuffer(x->dc.queue, os->bmax, CL_TRUE, 0, nb * sizeof *dev, dev, 0, NULL, NULL),
                     CL_SUCCESS);
    bm25_norms(idx, k1, b, norms);
    for (uint64_t i = 0; i < nb; i++) {
        ck_assert_int_eq(idx_decode_block(idx, i, docs, tfs), CLS_OK);
        float best = 0.0f;
        for (uint32_t j = 0; j < idx_info_count(idx->blocks[i].info); j++) {
            float c = score_contrib(cls_index_scoring(idx), 1.0f, tfs[j], norms[docs[j]]);
            best = c > best ? c : best;
        }
        ck_assert_msg(dev[i] == best, "block %llu: block_maxima %.9g, reference %.9g", (unsigned long long)i,
                      (double)dev[i], (double)best);
    }
    free(dev);
    free(norms);
    free(docs);
    free(tfs);
}

/* or_decode, or_bounds, or_plan, or_rest and or_hash (cl/or_parts.cl) against plain C, on the last device
 * batch of the engine's last OR search (its plan and buffers stay until the next search):
 *  - or_decode: each list's slots (a posting's contribution at the list's weight, bit for bit, and
 *    its place in its partition; ABI_OR_NO_SLOT past a block's postings) and its partitions' first
 *    slots S[p] (the first posting at or after the partition's first docID; the list's end after
 *    its last posting);
 *  - or_bounds: each term's M[t][p] (the largest bound of its blocks meeting partition p, as
 *    float bits), bit for bit;
 *  - or_plan: each query's UB[p] (M summed in query term order from 0.0f, so bit for bit), its
 *    seeds (the `seeds` highest nonzero UB, ties to the smaller partition, in partition order,
 *    marked in UB's top bit) and its largest UB;
 *  - or_rest: its queue holds only nonzero partitions that are not seeds, in eight bands of UB
 *    over the largest (the highest first, partition order within one), and every such partition
 *    whose UB reaches the final theta (or_rest ran at an earlier, lower theta, so it may hold more). */
static float t_as_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t t_as_uint(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint32_t check_or_plan(cls_engine *e, const cls_index *idx)
{
    clx_engine *x = engine_clx(e);
    const or_state *os = clx_algo_state(x, CLS_MODE_OR);
    const batch_plan *pl = x->plan;
    const uint32_t nq = pl->nq, nt = pl->nterms, np = os->parts, seeds = os->seeds,
                   L = clx_engine_params(x)->or_part_log;
    ck_assert(pl->ahead && np > 1 && nq > 0 && os->bsrc != ABI_BOUND_NONE);
    const uint32_t B = idx->block_size, nol = pl->nolists;
    const size_t slots = (size_t)pl->otasks * B;
    uint32_t *M = malloc((size_t)nt * np * 4), *ub = malloc((size_t)nq * np * 4),
             *seed = malloc((size_t)nq * seeds * 4), *ctl = malloc(((size_t)nq * 4 + 8) * 4),
             *act = malloc((size_t)nq * ABI_OR_ROUNDS * 4), *in_round = calloc(ABI_OR_ROUNDS * (size_t)nq, 4),
             *items = malloc((size_t)nq * np * 4), *rM = calloc((size_t)nt * np, 4), *S = malloc((size_t)nol * (np + 1) * 4),
             *rS = malloc((size_t)(np + 1) * 4), *docs = malloc(B * 4), *tfs = malloc(B * 4);
    float *bmax = malloc((idx->num_blocks + 1) * sizeof *bmax), *C = malloc(slots * 4);
    uint16_t *O = malloc(slots * 2);
    ck_assert(M && ub && seed && ctl && act && in_round && items && rM && S && rS && docs && tfs && bmax && C && O);
    struct { cl_mem m; size_t bytes; void *to; } rd[] = {
        {os->m.mem, (size_t)nt * np * 4, M},    {os->c.mem, slots * 4, C}, {os->o.mem, slots * 2, O},
        {os->s.mem, (size_t)nol * (np + 1) * 4, S},
        {os->ub.mem, (size_t)nq * np * 4, ub},  {os->seed.mem, (size_t)nq * seeds * 4, seed},
        {os->ctl.mem, ((size_t)nq * 4 + 8) * 4, ctl}, {os->items.mem, (size_t)nq * np * 4, items},
        {os->act.mem, (size_t)nq * ABI_OR_ROUNDS * 4, act}};
    for (size_t i = 0; i < sizeof rd / sizeof *rd; i++)
        ck_assert_int_eq(clEnqueueReadBuffer(x->dc.queue, rd[i].m, CL_TRUE, 0, rd[i].bytes, rd[i].to, 0, NULL, NULL),
                         CL_SUCCESS);
    if (os->bsrc == ABI_BOUND_TABLE)
        ck_assert_int_eq(clEnqueueReadBuffer(x->dc.queue, os->bmax, CL_TRUE, 0, idx->num_blocks * sizeof *bmax, bmax, 0,
                                             NULL, NULL), CL_SUCCESS);
    /* or_decode; each list once for its weight (the batch's queries share some), and every
     * term's record naming its list */
    ck_assert(nol > 0 && x->norm_k1 >= 0.0f);
    ck_assert_msg(nol < pl->nbounds, "or_decode: %u lists for %u query terms: none shared", nol, pl->nbounds);
    for (uint32_t l = 0; l < nol; l++)
        for (uint32_t m = l + 1; m < nol; m++)
            ck_assert(pl->olists[l].first_block != pl->olists[m].first_block || pl->olists[l].weight != pl->olists[m].weight);
    for (uint32_t i = 0; i < pl->nbounds; i++) {
        const abi_olist *ol = &pl->olists[pl->bounds[i].olist];
        ck_assert(pl->bounds[i].olist < nol && ol->first_block == pl->bounds[i].first_block &&
                  ol->weight == pl->terms[pl->bounds[i].term].weight && pl->bounds[i].olist_task == ol->task_base);
    }
    for (uint32_t l = 0; l < nol; l++) {
        const abi_olist *ol = &pl->olists[l];
        uint32_t next = 0; /* the first partition whose first slot is still to come */
        for (uint32_t b = 0; b < ol->num_blocks; b++) {
            uint32_t n = IDX_INFO_COUNT(idx->blocks[ol->first_block + b].info);
            ck_assert_int_eq(idx_decode_block(idx, ol->first_block + b, docs, tfs), CLS_OK);
            for (uint32_t j = 0; j < B; j++) {
                size_t at = ((size_t)ol->task_base + b) * B + j;
                if (j >= n) {
                    ck_assert_msg(O[at] == ABI_OR_NO_SLOT, "or_decode: list %u slot %zu: offset %u past the block's postings",
                                  l, at, O[at]);
                    continue;
                }
                float c = score_contrib(cls_index_scoring(idx), ol->weight, tfs[j], x->h_norms[docs[j]]);
                ck_assert_msg(t_as_uint(C[at]) == t_as_uint(c) && O[at] == (docs[j] & ((1u << L) - 1)),
                              "or_decode: list %u slot %zu: %08x at %u, plain C %08x at %u", l, at, t_as_uint(C[at]),
                              O[at], t_as_uint(c), docs[j] & ((1u << L) - 1));
                for (; next <= docs[j] >> L; next++) rS[next] = (uint32_t)at;
            }
            if (b + 1 == ol->num_blocks)
                for (; next <= np; next++) rS[next] = (ol->task_base + b) * B + n;
        }
        for (uint32_t p = 0; p <= np; p++)
            ck_assert_msg(S[(size_t)l * (np + 1) + p] == rS[p], "or_decode: list %u partition %u: first slot %u, plain C %u",
                          l, p, S[(size_t)l * (np + 1) + p], rS[p]);
    }
    /* or_bounds */
    for (uint32_t i = 0; i < pl->nbounds; i++) {
        const abi_bound *sk = &pl->bounds[i];
        ck_assert_uint_eq(sk->reserved, 0);
        float w = pl->terms[sk->term].weight, scale = sk->scale;
        if (pl->queries[sk->query].flags & ABI_QF_HASH) continue; /* a hashed query's M stays 0 */
        for (uint32_t b = 0; b < sk->num_blocks; b++) {
            const idx_block *blk = &idx->blocks[sk->first_block + b];
            float bound = os->bsrc == ABI_BOUND_MAXSCORE ? blk->max_score * scale : bmax[sk->first_block + b] * w;
            uint32_t key = t_as_uint(bound), p1 = blk->last >> L < np - 1 ? blk->last >> L : np - 1;
            for (uint32_t p = blk->first >> L; p <= p1; p++) {
                size_t at = (size_t)sk->term * np + p;
                if (rM[at] < key) rM[at] = key;
            }
        }
    }
    for (size_t i = 0; i < (size_t)nt * np; i++) {
        ck_assert_msg(M[i] == rM[i], "or_bounds: term %zu partition %zu: M %08x, plain C %08x", i / np, i % np, M[i], rM[i]);
    }
    /* or_plan and or_rest */
    uint32_t *order = malloc((size_t)np * 4);
    ck_assert(order);
    for (uint32_t q = 0; q < nq; q++) {
        const abi_query *aq = &pl->queries[q];
        const uint32_t *u = ub + (size_t)q * np;
        float mx = 0.0f;
        for (uint32_t p = 0; p < np; p++) {
            float sum = 0.0f;
            for (uint32_t t = 0; t < aq->num_terms; t++) sum += t_as_float(M[(size_t)(aq->term_start + t) * np + p]);
            ck_assert_msg((u[p] & ~ABI_OR_SEED_BIT) == t_as_uint(sum), "or_plan: query %u partition %u: UB %08x, plain C %08x",
                          q, p, u[p], t_as_uint(sum));
            mx = sum > mx ? sum : mx;
        }
        ck_assert_uint_eq(ctl[4 * q + 3], t_as_uint(mx));
        /* the seeds: partitions by UB descending, then partition ascending; the first `seeds`
         * nonzero ones, listed in partition order */
        uint32_t n = 0;
        for (uint32_t p = 0; p < np; p++)
            if (u[p] & ~ABI_OR_SEED_BIT) order[n++] = p;
        for (uint32_t i = 1; i < n; i++) /* insertion sort: the test's partitions are few */
            for (uint32_t j = i; j > 0; j--) {
                uint32_t a = order[j - 1], c = order[j], ka = u[a] & ~ABI_OR_SEED_BIT, kc = u[c] & ~ABI_OR_SEED_BIT;
                if (kc > ka || (kc == ka && c < a)) {
                    order[j - 1] = c;
                    order[j] = a;
                } else {
                    break;
                }
            }
        uint32_t m = n < seeds ? n : seeds, listed = 0;
        for (uint32_t p = 0; p < np; p++) {
            int want = 0;
            for (uint32_t i = 0; i < m; i++) want |= order[i] == p;
            ck_assert_msg(!!(u[p] & ABI_OR_SEED_BIT) == want, "or_plan: query %u partition %u: seed %d, plain C %d", q,
                          p, !!(u[p] & ABI_OR_SEED_BIT), want);
            if (want) ck_assert_uint_eq(seed[(size_t)q * seeds + listed++], p);
        }
        for (uint32_t i = listed; i < seeds; i++) ck_assert_uint_eq(seed[(size_t)q * seeds + i], ABI_NO_BLOCK);
        /* or_rest's queue */
        float theta = t_as_float(ctl[4 * q]);
        uint32_t len = ctl[4 * q + 2];
        ck_assert_uint_le(len, np);
        const uint32_t *it = items + (size_t)q * np;
        int last_band = 8;
        uint32_t last_p = 0;
        for (uint32_t i = 0; i < len; i++) {
            uint32_t p = it[i];
            ck_assert_uint_lt(p, np);
            ck_assert_msg(u[p] != 0 && !(u[p] & ABI_OR_SEED_BIT), "or_rest: query %u queued partition %u (UB %08x)", q, p,
                          u[p]);
            float f = t_as_float(u[p]);
            int band = !(mx > 0.0f) || isinf(mx) ? 7 : (int)fminf(7.0f, 8.0f * f / mx);
            ck_assert_msg(band < last_band || (band == last_band && p > last_p), "or_rest: query %u: queue out of order at %u",
                          q, i);
            last_band = band;
            last_p = p;
        }
        for (uint32_t p = 0; p < np; p++) {
            if (u[p] == 0 || (u[p] & ABI_OR_SEED_BIT) || t_as_float(u[p]) * ABI_OR_SLACK < theta) continue;
            int queued = 0;
            for (uint32_t i = 0; i < len; i++) queued |= it[i] == p;
            ck_assert_msg(queued, "or_rest: query %u: partition %u (UB %g) reaches theta %g and is not queued", q, p,
                          (double)t_as_float(u[p]), (double)theta);
        }
    }
    free(order);
    /* or_rest's lists: round r lists, once each and in any order, the queries whose queue holds
     * more than ABI_OR_ROUND_FROM(r) entries, and no other */
    for (uint32_t r = 0; r < ABI_OR_ROUNDS; r++) {
        uint32_t n = ctl[4 * nq + 4 + r], want = 0;
        for (uint32_t q = 0; q < nq; q++) want += ctl[4 * q + 2] > ABI_OR_ROUND_FROM(r);
        ck_assert_msg(n == want, "or_rest: round %u lists %u queries, plain C %u", r, n, want);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t q = act[(size_t)r * nq + i];
            ck_assert_uint_lt(q, nq);
            ck_assert_msg(ctl[4 * q + 2] > ABI_OR_ROUND_FROM(r) && !in_round[(size_t)r * nq + q],
                          "or_rest: round %u lists query %u (queue %u) wrongly or twice", r, q, ctl[4 * q + 2]);
            in_round[(size_t)r * nq + q] = 1;
        }
    }
    /* or_hash: each hashed query's table holds every document of its lists once, with its sum
     * in query term order (the first contribution, then each next added), bit for bit, and no
     * other key; an entry no document took holds no sum. Its units split the partitions in
     * order, from the first to the last; the hashed queries split into several are counted. */
    uint32_t split = 0;
    for (uint32_t u = 0; u < pl->nunits; u++) {
        const abi_unit *un = &pl->units[u];
        if (!(pl->queries[un->query].flags & ABI_QF_HASH)) continue;
        int first = un->first_unit == u, last = u + 1 == pl->nunits || pl->units[u + 1].query != un->query;
        ck_assert(un->begin < un->end && un->end <= np && (first ? un->begin == 0 : pl->units[u - 1].end == un->begin) &&
                  (!last || un->end == np));
        split += first && !last;
    }
    if (pl->ntables) {
        uint32_t *tab = malloc((size_t)pl->table_words * 4), N = idx->num_docs;
        float *acc = malloc((size_t)N * 4);
        uint8_t *seen = malloc(N);
        ck_assert(tab && acc && seen);
        ck_assert_int_eq(clEnqueueReadBuffer(x->dc.queue, os->htab.mem, CL_TRUE, 0, (size_t)pl->table_words * 4, tab, 0, NULL, NULL),
                         CL_SUCCESS);
        for (uint32_t q = 0; q < nq; q++) {
            const abi_query *aq = &pl->queries[q];
            if (!(aq->flags & ABI_QF_HASH)) continue;
            memset(seen, 0, N);
            uint32_t ndocs = 0, E = 1u << ABI_QF_HASH_LOG(aq->flags), found = 0;
            for (uint32_t t = 0; t < aq->num_terms; t++) {
                const abi_bound *sk = &pl->bounds[aq->term_start + t];
                float w = pl->terms[aq->term_start + t].weight;
                for (uint32_t b = 0; b < sk->num_blocks; b++) {
                    ck_assert_int_eq(idx_decode_block(idx, sk->first_block + b, docs, tfs), CLS_OK);
                    for (uint32_t j = 0; j < IDX_INFO_COUNT(idx->blocks[sk->first_block + b].info); j++) {
                        float c = score_contrib(cls_index_scoring(idx), w, tfs[j], x->h_norms[docs[j]]);
                        acc[docs[j]] = seen[docs[j]] ? acc[docs[j]] + c : c;
                        ndocs += !seen[docs[j]];
                        seen[docs[j]] = 1;
                    }
                }
            }
            ck_assert_uint_le(2 * ndocs, E);
            for (uint32_t i = 0; i < E; i++) {
                uint32_t key = tab[aq->cand_offset + 2 * i], sum = tab[aq->cand_offset + 2 * i + 1];
                if (key == 0xFFFFFFFFu) {
                    ck_assert_msg(sum == 0, "or_hash: query %u entry %u: no key, sum %08x", q, i, sum);
                    continue;
                }
                ck_assert_msg(key < N && seen[key] == 1 && sum == t_as_uint(acc[key]),
                              "or_hash: query %u entry %u: document %u, sum %08x; plain C %s %08x", q, i, key, sum,
                              key < N && seen[key] ? "holds it," : "does not hold it", key < N ? t_as_uint(acc[key]) : 0u);
                seen[key] = 2; /* once */
                found++;
            }
            ck_assert_msg(found == ndocs, "or_hash: query %u: %u documents in its table, plain C %u", q, found, ndocs);
        }
        free(tab), free(acc), free(seen);
    }
    free(M), free(ub), free(seed), free(ctl), free(act), free(in_round), free(items), free(rM), free(S), free(rS);
    free(docs), free(tfs), free(bmax);
    free(C), free(O);
    return split;
}

/* or_pool_theta (cl/or_parts.cl) against plain C, launched on the engine's OR buffers with pools
 * written here: four queries, pools of P slots, k 10; each query's theta becomes the larger of
 * itself and the k-th largest key of its pool where the pool holds more than k and did not
 * overflow, and stays otherwise. */
static int t_key_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}
static void check_or_pool_theta(cls_engine *e)
{
    enum { Q = 4, P = 64, K = 10 };
    clx_engine *x = engine_clx(e);
    const or_state *os = clx_algo_state(x, CLS_MODE_OR);
    ck_assert_uint_ge(os->ctl.cap, ABI_OR_CTL_BATCH(Q) * 4);
    ck_assert_uint_ge(os->cscore.cap, Q * P * 4);
    uint32_t keys[Q * P], ctl[ABI_OR_CTL_BATCH(Q)] = {0}, want[Q], sorted[P];
    uint64_t r = 12345;
    for (uint32_t i = 0; i < Q * P; i++) { /* scores of a few values: ties at the k-th */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        keys[i] = t_as_uint(1.0f + (float)((r >> 33) % 12) / 8.0f);
    }
    const uint32_t count[Q] = {50, K, P + 1, P}, theta0[Q] = {0, t_as_uint(0.5f), 0, t_as_uint(100.0f)};
    for (uint32_t q = 0; q < Q; q++) {
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA)] = theta0[q];
        ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_OFFERED)] = count[q];
        want[q] = theta0[q];
        if (count[q] <= K || count[q] > P) continue;
        memcpy(sorted, keys + q * P, count[q] * 4);
        qsort(sorted, count[q], 4, t_key_desc);
        if (sorted[K - 1] > want[q]) want[q] = sorted[K - 1];
    }
    ck_assert_int_eq(clEnqueueWriteBuffer(x->dc.queue, os->ctl.mem, CL_TRUE, 0, sizeof ctl, ctl, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueWriteBuffer(x->dc.queue, os->cscore.mem, CL_TRUE, 0, sizeof keys, keys, 0, NULL, NULL),
                     CL_SUCCESS);
    cl_uint k = K, pool = P;
    dev_arg a[] = {DEV_U32(k), DEV_U32(pool), DEV_MEM(os->ctl.mem), DEV_MEM(os->cscore.mem)};
    ck_assert_msg(dev_run(&x->dc, "or_pool_theta", a, Q, x->idx->block_size, "score") == CLS_OK, "%s", cls_last_error());
    /* a count that disagrees with the kernel's parameters is refused before anything is set */
    ck_assert_int_eq(dev_run_n(&x->dc, "or_pool_theta", a, DEV_NARGS(a) - 1, 0, x->idx->block_size, "score"), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "or_pool_theta takes 4 arguments, given 3"), "%s", cls_last_error());
    ck_assert_int_eq(clEnqueueReadBuffer(x->dc.queue, os->ctl.mem, CL_TRUE, 0, sizeof ctl, ctl, 0, NULL, NULL), CL_SUCCESS);
    dev_profile_collect(&x->dc, 1);
    for (uint32_t q = 0; q < Q; q++)
        ck_assert_msg(ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA)] == want[q],
                      "or_pool_theta: query %u (%u keys): theta %08x, plain C %08x", q, count[q],
                      ctl[ABI_OR_CTL_AT(q, ABI_OR_CTL_THETA)], want[q]);
    ck_assert_uint_gt(want[0], 0); /* the first query's theta rose */
}

/* The test device's parameters with OR's partitions of 2^part_log documents and OR_HASH_RATIO
 * hash_ratio. */
static clx_params or_params(unsigned part_log, unsigned hash_ratio)
{
    clx_device d;
    clx_params prm;
    ck_assert_msg(clx_select(tu_device(), &d) == CLS_OK && clx_params_for(&d.info, &prm) == CLS_OK, "%s", cls_last_error());
    prm.or_part_log = part_log;
    prm.or_hash_ratio = hash_ratio;
    return prm;
}

/* OR by partitions (cl/or_parts.cl) equals exhaustive OR: partitions of 64 documents (many per
 * list, blocks spanning several), pools of 3 candidates (every query overflows and runs again),
 * k from 1 to past the collection, the clones' ties, repeated terms, the default BM25 parameters
 * (bounds from max_score) and others (block maxima computed on the device), or_bounds with
 * several groups a term; and it leaves some partitions unscored, and in scored ones some terms'
 * postings unread (not essential there). */
START_TEST(or_prunes_by_partitions)
{
    fixture f = fixture_open(41, 9000, 300, 43, 150);
    /* every query by partitions (or_hashes_queries_of_few_postings hashes some) */
    clx_params prm = or_params(6, 0);
    cls_engine *small;
    ck_assert_msg(engine_create_with(f.idx, tu_device(), &prm, &small) == CLS_OK, "%s", cls_last_error());
    or_force_partitions(clx_algo_state(engine_clx(f.dev), CLS_MODE_OR), 1); /* 9,000 documents would keep the dense row */
    or_force_partitions(clx_algo_state(engine_clx(small), CLS_MODE_OR), 1);
    const uint32_t ks[] = {1, 10, 100, 10000};
    cls_engine *engines[] = {f.dev, small};
    for (size_t e = 0; e < 2; e++)
        for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
            same_as_ref_mode(engines[e], f.ref, f.b, CLS_MODE_OR, ks[i], 0.9f, 0.4f);
            ck_assert_uint_eq(counter(engines[e], "or_bounds_from"), ABI_BOUND_MAXSCORE);
            if (e == 1 && ks[i] == 10) check_or_plan(small, f.idx);
            if (e == 1 && ks[i] <= 10) /* 141 partitions a query: some are left unscored (on this
                                        * random collection bounds prune little: 86% scored at k 1) */
                ck_assert_msg(counter(small, "partitions_scored") < cls_batch_count(f.b) * 141,
                              "k %u: %llu partitions scored of %llu", ks[i],
                              (unsigned long long)counter(small, "partitions_scored"),
                              (unsigned long long)cls_batch_count(f.b) * 141);
            if (e == 1 && ks[i] <= 10) /* and within scored partitions, some terms not essential
                                        * (their postings left unread by the first pass) */
                ck_assert_uint_gt(counter(small, "partition_terms_skipped"), 0);
        }
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 10, 1.2f, 0.75f);
    ck_assert_uint_eq(counter(small, "or_bounds_from"), ABI_BOUND_TABLE);
    check_block_maxima(small, f.idx, 1.2f, 0.75f);
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 10, 0.5f, 1.0f);
    check_or_plan(small, f.idx); /* bounds from the block maxima table */
    check_or_pool_theta(small);
    or_set_bound_ways(clx_algo_state(engine_clx(small), CLS_MODE_OR), 5); /* or_bounds: five groups a term, some with no blocks */
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 10, 0.9f, 0.4f);
    check_or_plan(small, f.idx);
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 100, 1.2f, 0.75f);
    check_or_plan(small, f.idx);
    or_set_bound_ways(clx_algo_state(engine_clx(small), CLS_MODE_OR), 0);
    or_set_pool(clx_algo_state(engine_clx(small), CLS_MODE_OR), 3);
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 10, 0.9f, 0.4f);
    ck_assert_uint_gt(counter(small, "queries_rerun"), 10);
    same_as_ref_mode(small, f.ref, f.b, CLS_MODE_OR, 100, 1.2f, 0.75f);
    cls_engine_free(small);
    /* or_score's exact sums both ways (OR_SEARCH_COST): binary search in every term's postings
     * (0), and reading them in order (65,536), where the default picks by the counts */
    const unsigned costs[] = {0, 65536};
    for (size_t c = 0; c < sizeof costs / sizeof *costs; c++) {
        prm.or_search_cost = costs[c];
        cls_engine *cx;
        ck_assert_msg(engine_create_with(f.idx, tu_device(), &prm, &cx) == CLS_OK, "%s", cls_last_error());
        or_force_partitions(clx_algo_state(engine_clx(cx), CLS_MODE_OR), 1);
        for (size_t i = 1; i < 3; i++) { /* k 10 and 100 */
            same_as_ref_mode(cx, f.ref, f.b, CLS_MODE_OR, ks[i], 0.9f, 0.4f);
            ck_assert_uint_gt(counter(cx, "partition_terms_skipped"), 0); /* so the exact sums ran */
        }
        cls_engine_free(cx);
    }
    fixture_close(&f);
}
END_TEST

/* OR by hashing (or_hash, cl/or_parts.cl) equals exhaustive OR, on or_prunes_by_partitions'
 * collection and partitions of 64 documents (141): OR_HASH_RATIO 16 hashes the queries of at most
 * 2,256 postings and scores the others by partitions in the same batches, 4096 hashes every query;
 * k from 1 to past the collection, the clones' ties, repeated terms, k1/b other than the index's,
 * pools of 3 candidates (every query overflows and runs again); check_or_plan reads each hashed
 * query's table against plain C. */
START_TEST(or_hashes_queries_of_few_postings)
{
    fixture f = fixture_open(41, 9000, 300, 43, 150);
    clx_params some = or_params(6, 16), every = or_params(6, 4096);
    cls_engine *mixed, *all;
    ck_assert_msg(engine_create_with(f.idx, tu_device(), &some, &mixed) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(engine_create_with(f.idx, tu_device(), &every, &all) == CLS_OK, "%s", cls_last_error());
    or_force_partitions(clx_algo_state(engine_clx(mixed), CLS_MODE_OR), 1);
    or_force_partitions(clx_algo_state(engine_clx(all), CLS_MODE_OR), 1);
    const uint64_t nq = cls_batch_count(f.b);
    uint64_t matching = 0; /* queries of a term the index holds: the others are empty, never hashed */
    for (uint64_t q = 0; q < nq; q++) matching += f.b->q[q].num_terms > 0;
    const uint32_t ks[] = {1, 10, 100, 10000};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        same_as_ref_mode(mixed, f.ref, f.b, CLS_MODE_OR, ks[i], 0.9f, 0.4f);
        ck_assert_msg(counter(mixed, "queries_hashed") > 0 && counter(mixed, "queries_hashed") < nq,
                      "k %u: %llu of %llu queries hashed", ks[i], (unsigned long long)counter(mixed, "queries_hashed"),
                      (unsigned long long)nq);
        if (ks[i] == 10) check_or_plan(mixed, f.idx);
        same_as_ref_mode(all, f.ref, f.b, CLS_MODE_OR, ks[i], 0.9f, 0.4f);
        ck_assert_uint_eq(counter(all, "queries_hashed"), matching);
        ck_assert_uint_eq(counter(all, "partitions_scored"), 0);
    }
    ck_assert_uint_gt(check_or_plan(all, f.idx), 0); /* some query hashed by several groups */
    same_as_ref_mode(mixed, f.ref, f.b, CLS_MODE_OR, 10, 1.2f, 0.75f);
    check_or_plan(mixed, f.idx);
    or_set_pool(clx_algo_state(engine_clx(mixed), CLS_MODE_OR), 3);
    or_set_pool(clx_algo_state(engine_clx(all), CLS_MODE_OR), 3);
    same_as_ref_mode(mixed, f.ref, f.b, CLS_MODE_OR, 10, 0.9f, 0.4f);
    ck_assert_uint_gt(counter(mixed, "queries_rerun"), 10);
    same_as_ref_mode(all, f.ref, f.b, CLS_MODE_OR, 100, 1.2f, 0.75f);
    ck_assert_uint_gt(counter(all, "queries_rerun"), 10);
    cls_engine_free(mixed);
    cls_engine_free(all);
    fixture_close(&f);
}
END_TEST

/* Every document holds "common" one to three times and up to 39 filler words; one in 205 holds
 * "rare". */
static size_t common_rare_doc(void *ctx, uint32_t d, char *text, size_t cap)
{
    uint64_t *st = ctx;
    size_t len = 0;
    uint32_t tf = 1 + (uint32_t)(tu_rand(st) % 3), filler = (uint32_t)(tu_rand(st) % 40);
    for (uint32_t i = 0; i < tf; i++) len += (size_t)snprintf(text + len, cap - len, "common ");
    if (d % 205 == 7) len += (size_t)snprintf(text + len, cap - len, "rare ");
    for (uint32_t i = 0; i < filler; i++) len += (size_t)snprintf(text + len, cap - len, "f%u ", i);
    return len;
}

/* or_pool_theta keeps the pool of a query whose k-th best lies far below its largest bound: "rare
 * common" on 8,192 documents that all hold "common", 40 of them "rare". The k-th best at k 100 is
 * a common-only document, a hundred-thousandth of the rare term's scores, so the histogram of
 * offers (or_hist_theta) stays in its lowest bin and, without or_pool_theta, every partition
 * offered every document it holds: 8,192 candidates, which a pool of 6,144 does not hold (the
 * query ran again). With it the query fits; the results equal the reference's either way. */
START_TEST(or_pool_theta_keeps_pools_small)
{
    uint64_t st = 99;
    cls_index *idx = built_index(8192, common_rare_doc, &st);
    clx_params prm = or_params(6, 0); /* by partitions, whose pools this is about */
    cls_engine *dev, *ref;
    ck_assert_msg(engine_create_with(idx, tu_device(), &prm, &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    or_force_partitions(clx_algo_state(engine_clx(dev), CLS_MODE_OR), 1);
    or_set_pool(clx_algo_state(engine_clx(dev), CLS_MODE_OR), 6144);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "q", "rare common"), CLS_OK);
    same_as_ref_mode(dev, ref, b, CLS_MODE_OR, 100, 0.9f, 0.4f);
    ck_assert_uint_eq(counter(dev, "queries_rerun"), 0);
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* term^w: a weight multiplies the term's BM25 weight (idf times the sum of its occurrences'
 * weights, so "w1^2" is "w1 w1" and "w1 w1^2" is "w1^3"), on both engines; a malformed weight is
 * CLS_E_FORMAT naming the query and the token, and the batch keeps what it held. */
START_TEST(weighted_terms)
{
    cls_index *idx = random_index(23, 2000, 200);
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    const char *same[][2] = {{"w1^2", "w1 w1"}, {"w1 w1^2", "w1^3"}, {"w2^0.5 w3", "w2^.5 w3"}, {"W2^1.0e0", "w2"},
                             {"w4^2 w4^2", "w4^4"}, {"w3^25e-1 w2", "w3^2.5\tw2"}};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        cls_batch *a, *c;
        ck_assert_int_eq(cls_batch_create(idx, &a), CLS_OK);
        ck_assert_int_eq(cls_batch_create(idx, &c), CLS_OK);
        ck_assert_int_eq(cls_batch_add(a, "1", same[i][0]), CLS_OK);
        ck_assert_int_eq(cls_batch_add(c, "1", same[i][1]), CLS_OK);
        for (int m = 0; m < CLS_NUM_MODES; m++) {
            cls_results *ra = search(ref, a, (cls_mode)m, 100), *rc = search(ref, c, (cls_mode)m, 100);
            ck_assert_msg(cls_results_compare(ra, rc, 0.0) == CLS_OK, "'%s' against '%s': %s", same[i][0], same[i][1],
                          cls_last_error());
            cls_results_free(ra);
            cls_results_free(rc);
            same_as_ref(dev, ref, a, (cls_mode)m, 100);
        }
        cls_batch_free(a);
        cls_batch_free(c);
    }
    /* a weight scales the score: w1^2 alone scores exactly twice w1 (idf * 2 is exact in double,
     * and (2w * f) / (f + n) is 2 ((w * f) / (f + n)) in float) */
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "one", "w1"), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "two", "w1^2"), CLS_OK);
    cls_results *r = search(ref, b, CLS_MODE_OR, 10);
    size_t n1, n2;
    const uint32_t *d1, *d2;
    const float *s1, *s2;
    cls_results_get(r, 0, &n1, &d1, &s1);
    cls_results_get(r, 1, &n2, &d2, &s2);
    ck_assert_uint_eq(n1, 10);
    ck_assert_uint_eq(n2, 10);
    for (size_t i = 0; i < n1; i++) {
        ck_assert_uint_eq(d1[i], d2[i]);
        ck_assert_float_eq(s2[i], 2.0f * s1[i]);
    }
    cls_results_free(r);
    /* each token alone between two good terms; "w2 ^2": the caret's token is "^2" */
    const char *bad[] = {"w1^0", "w1^-1", "w1^abc", "w1^", "^", "^2", "w1^nan", "w1^inf", "w1^1e10",
                         "w1^1e-10", "w1^2^3", "w1^0x10", "w1^1.2.3", "w1^2e", "w1^+2", "w1^1,5", "w1^0.0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[64], token[64];
        snprintf(text, sizeof text, "w3 w2 %s w4", bad[i]);
        snprintf(token, sizeof token, "'%s'", bad[i]);
        ck_assert_msg(cls_batch_add(b, "q7", text) == CLS_E_FORMAT, "'%s' accepted", text);
        const char *err = cls_last_error();
        ck_assert_msg(strstr(err, "'q7'") && strstr(err, token), "'%s': %s", text, err);
        ck_assert_int_eq(cls_query_check("q7", text), CLS_E_FORMAT); /* the same without an index */
        ck_assert_msg(strstr(cls_last_error(), "'q7'") && strstr(cls_last_error(), token), "%s", cls_last_error());
    }
    ck_assert_uint_eq(cls_batch_count(b), 2);
    ck_assert_int_eq(cls_query_check("q8", "w1^2.5 nosuchterm^3 w2 the^1e-9"), CLS_OK);
    ck_assert_int_eq(cls_query_check(NULL, "w1"), CLS_E_ARG);
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* One query in one call: cls_engine_search_text equals a batch of that one query, on both
 * engines, call after call (the engine's batch is reused), and refuses NULL. */
START_TEST(search_text_is_one_query)
{
    fixture f = fixture_open(33, 800, 100, 3, 0);
    const char *texts[] = {"w1 w2", "w0", "w3 w5 w7", "nosuchterm"};
    cls_engine *engines[] = {f.ref, f.dev};
    for (size_t e = 0; e < 2; e++)
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            cls_batch *b;
            ck_assert_int_eq(cls_batch_create(f.idx, &b), CLS_OK);
            ck_assert_int_eq(cls_batch_add(b, "1", texts[i]), CLS_OK);
            cls_results *want = search(engines[e], b, CLS_MODE_OR, 1000), *got; /* cls_search_defaults */
            ck_assert_int_eq(cls_results_create(&got), CLS_OK);
            ck_assert_msg(cls_engine_search_text(engines[e], texts[i], NULL, got) == CLS_OK, "%s", cls_last_error());
            ck_assert_uint_eq(cls_results_count(got), 1);
            ck_assert_msg(cls_results_compare(want, got, 0.0) == CLS_OK, "%s: %s", texts[i], cls_last_error());
            cls_results_free(want);
            cls_results_free(got);
            cls_batch_free(b);
        }
    ck_assert_int_eq(cls_engine_search_text(f.ref, NULL, NULL, NULL), CLS_E_ARG);
    fixture_close(&f);
}
END_TEST

/* For every query, at k: the and-or hits are the AND hits (same order, same scores), then the
 * OR ranking's hits that AND lacks, in the OR ranking's order, up to k in all. */
static void and_or_is_and_then_or(cls_engine *e, const cls_batch *b, uint32_t k, int *completed)
{
    cls_results *ra = search(e, b, CLS_MODE_AND, k), *ro = search(e, b, CLS_MODE_OR, CLS_MAX_K),
                *rao = search(e, b, CLS_MODE_AND_OR, k);
    for (size_t i = 0; i < cls_batch_count(b); i++) {
        size_t na, no, n;
        const uint32_t *da, *dor, *d;
        const float *sa, *so, *s;
        cls_results_get(ra, i, &na, &da, &sa);
        cls_results_get(ro, i, &no, &dor, &so);
        cls_results_get(rao, i, &n, &d, &s);
        const char *qid = cls_batch_qid(b, i);
        ck_assert_msg(n == (no < k ? no : k), "%s k %u: %zu hits, OR has %zu", qid, k, n, no);
        for (size_t j = 0; j < na; j++)
            ck_assert_msg(d[j] == da[j] && s[j] == sa[j], "%s k %u: hit %zu is not AND's", qid, k, j);
        size_t at = na;
        for (size_t j = 0; j < no && at < n; j++) {
            if (holds(ra, i, dor[j])) continue;
            ck_assert_msg(d[at] == dor[j] && s[at] == so[j], "%s k %u: hit %zu is not OR's next", qid, k, at);
            at++;
        }
        ck_assert_uint_eq(at, n);
        if (na > 0 && n > na) (*completed)++;
    }
    cls_results_free(ra);
    cls_results_free(ro);
    cls_results_free(rao);
}

START_TEST(and_or_is_and_completed_by_or)
{
    cls_index *idx = random_index(5, 2000, 300);
    cls_batch *b = random_queries(idx, 9, 150, 300);
    const char *devs[] = {"ref", tu_device()};
    for (int i = 0; i < 2; i++) {
        cls_engine *e;
        ck_assert_msg(cls_engine_create(idx, devs[i], &e) == CLS_OK, "%s", cls_last_error());
        int completed = 0;
        and_or_is_and_then_or(e, b, 10, &completed);
        and_or_is_and_then_or(e, b, 200, &completed);
        ck_assert_msg(completed > 0, "%s: no query had both AND hits and OR completions", devs[i]);
        cls_engine_free(e);
    }
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* The postings are hashed by the first engine made on an index and not again by the next. */
START_TEST(postings_verified_once)
{
    cls_index *idx = random_index(29, 200, 50);
    ck_assert_int_eq(idx_words_verified(idx), 0);
    cls_engine *ref, *dev;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    ck_assert_int_eq(idx_words_verified(idx), 1);
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    cls_batch *b = random_queries(idx, 2, 20, 50);
    same_as_ref(dev, ref, b, CLS_MODE_OR, 10);
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* ---- the batch planner ------------------------------------------------------------------------- */

/* The profile's transfer steps are the copies between host and device alone: a fill on the
 * device is counted with the kernels it prepares (or_bounds' fills once made `bench e2e`'s H2D
 * column hold or_bounds). */
static void profile_transfers_are_copies(const cls_engine *dev)
{
    const cls_profile_step *st;
    size_t n = cls_engine_profile(dev, &st, NULL);
    for (size_t i = 0; i < n; i++)
        if (st[i].transfer)
            ck_assert_msg(strcmp(st[i].name, "upload") == 0 || strcmp(st[i].name, "download") == 0 ||
                              strcmp(st[i].name, "lists up") == 0,
                          "profile step %s counted as a transfer", st[i].name);
}

/* Budgets from "one query a batch" up: the device cuts the search into batches and the results
 * stay those of the reference. */
START_TEST(budget_splits_batches)
{
    fixture f = fixture_open(21, 2500, 300, 4, 120);
    clx_engine *cx = engine_clx(f.dev);
    ck_assert_ptr_nonnull(cx);
    const uint64_t budgets[] = {1, 16 << 10, 64 << 10};
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        clx_set_budget(cx, budgets[i]);
        for (int m = 0; m < CLS_NUM_MODES; m++) {
            same_as_ref(f.dev, f.ref, f.b, (cls_mode)m, 100);
            const cls_profile_step *st;
            uint32_t batches;
            size_t n = cls_engine_profile(f.dev, &st, &batches);
            ck_assert_uint_gt(n, 0);
            profile_transfers_are_copies(f.dev);
            if (i == 0) ck_assert_uint_eq(batches, cls_batch_count(f.b)); /* one query a batch */
            else ck_assert_uint_gt(batches, 1);
        }
    }
    /* OR by partitions, whose batches share decoded lists (abi_olist): a query that does not fit
     * takes back its lists and their links, and every batch decodes its own */
    or_force_partitions(clx_algo_state(cx, CLS_MODE_OR), 1);
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        clx_set_budget(cx, budgets[i]);
        same_as_ref(f.dev, f.ref, f.b, CLS_MODE_OR, 100);
        ck_assert_uint_gt(counter(f.dev, "partitions_scored"), 0);
        const cls_profile_step *st;
        uint32_t batches;
        ck_assert_uint_gt(cls_engine_profile(f.dev, &st, &batches), 0);
        ck_assert_uint_gt(batches, 1);
        profile_transfers_are_copies(f.dev);
    }
    fixture_close(&f);
}
END_TEST

/* A device engine on idx whose batches aim at 1 us: after the first, as few queries as its floor. */
static cls_engine *engine_of_tiny_batches(const cls_index *idx)
{
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = tu_device();
    o.batch_ms = 0.001;
    cls_engine *dev;
    ck_assert_msg(cls_engine_create_opts(idx, &o, &dev) == CLS_OK, "%s", cls_last_error());
    return dev;
}

/* The cost model: an engine's first batch takes up to its floor of queries; later batches as
 * many as its measured rate gets through in the target time, so with a floor of one query and a
 * target of a microsecond a search is cut into many batches, with the reference's results. */
START_TEST(cost_model_sizes_batches)
{
    fixture f = fixture_open(25, 2500, 300, 6, 120);
    cls_engine *dev = engine_of_tiny_batches(f.idx);
    clx_set_batch_floor(engine_clx(dev), 1);
    for (int m = 0; m < CLS_NUM_MODES; m++) {
        same_as_ref(dev, f.ref, f.b, (cls_mode)m, 10);
        const cls_profile_step *st;
        uint32_t batches;
        cls_engine_profile(dev, &st, &batches);
        if (m == 0) ck_assert_uint_eq(batches, cls_batch_count(f.b)); /* nothing measured yet: batches of the floor, one query */
        else ck_assert_uint_gt(batches, 8);
        ck_assert_uint_gt(counter(dev, "cost_rate"), 0);
    }
    cls_engine_free(dev);
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = tu_device();
    o.batch_ms = -1;
    ck_assert_int_eq(cls_engine_create_opts(f.idx, &o, &dev), CLS_E_ARG);
    fixture_close(&f);
}
END_TEST

/* An engine over n executors of the test device (`-d cpu,cpu,...`) with placement pl; split_min:
 * the fewest queries a part of a split search holds (0: the scheduler's own). */
/* Every executor of set: OR by partitions with pools of 3 candidates, so that searches overflow
 * them and run queries again. */
static void small_or_pools(cls_engine *set)
{
    for (unsigned i = 0; i < engine_executors(set); i++) {
        or_force_partitions(clx_algo_state(engine_executor(set, i), CLS_MODE_OR), 1);
        or_set_pool(clx_algo_state(engine_executor(set, i), CLS_MODE_OR), 3);
    }
}

static cls_engine *device_set(const cls_index *idx, unsigned n, cls_placement pl, unsigned split_min)
{
    char spec[512] = "";
    for (unsigned i = 0; i < n; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s%s", i ? "," : "", tu_device());
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = spec;
    o.placement = pl;
    cls_engine *set;
    ck_assert_msg(cls_engine_create_opts(idx, &o, &set) == CLS_OK, "%s", cls_last_error());
    if (split_min) {
        sched_set_split_min(engine_sched(set), split_min);
        sched_set_split_always(engine_sched(set), 1);
    }
    return set;
}

/* The host executor beside a device (-d host:2,DEVICE, and DEVICE,host:2): every search split
 * over both (split_min 1, split_always), then by their lines where the split pays, and run whole
 * on the device where it would not (split_pays); then searches in
 * flight (each whole on one), equal the reference engine's in every mode; each executor answers a
 * share; a search run whole goes to the executor predicted to finish it first. A list with the
 * host is never sharded, and takes the host once. Then the time model's fit itself. */
START_TEST(host_with_a_device_matches_reference)
{
    fixture f = fixture_open(47, 5000, 250, 19, 160);
    char specs[2][128];
    snprintf(specs[0], sizeof specs[0], "host:2,%s", tu_device());
    snprintf(specs[1], sizeof specs[1], "%s,host:2", tu_device());
    for (int i = 0; i < 2; i++) {
        cls_engine *set;
        ck_assert_msg(cls_engine_create(f.idx, specs[i], &set) == CLS_OK, "%s: %s", specs[i], cls_last_error());
        ck_assert_uint_eq(engine_executors(set), 2);
        ck_assert_msg(strstr(cls_engine_describe(set), "host executor") && strstr(cls_engine_describe(set), "never sharded"),
                      "%s", cls_engine_describe(set));
        ck_assert_ptr_nonnull(engine_clx(set));
        sched_set_split_min(engine_sched(set), 1);
        for (int pass = 0; pass < 3; pass++) {
            /* the first: every search split (sched_set_split_always), whatever the models learn;
             * the second: equal lines slow enough that halving a search saves far more than any
             * split costs, a split that pays; the third: the host a thousand times slower than the
             * device, a split that would save under SPLIT_MIN_GAIN, run whole on the device */
            sched_set_split_always(engine_sched(set), pass == 0);
            if (pass == 1) {
                sched_set_model(engine_sched(set), 0, 1e5, 1e-6);
                sched_set_model(engine_sched(set), 1, 1e5, 1e-6);
            } else if (pass == 2) {
                sched_set_model(engine_sched(set), i == 0 ? 0 : 1, 1e2, 1e-6);
            }
            for (int md = 0; md < CLS_NUM_MODES; md++) {
                same_as_ref(set, f.ref, f.b, (cls_mode)md, 10);
                same_as_ref(set, f.ref, f.b, (cls_mode)md, 1000);
                ck_assert_uint_eq(counter(set, "searches_split"), pass < 2);
                if (pass < 2) {
                    ck_assert_uint_gt(counter(set, "device_0_queries"), 0);
                    ck_assert_uint_gt(counter(set, "device_1_queries"), 0);
                } else { /* whole, on the device */
                    ck_assert_uint_eq(counter(set, i == 0 ? "device_0_queries" : "device_1_queries"), 0);
                }
            }
        }
        /* searches in flight: each whole on one executor */
        enum { N = 4 };
        cls_search *jobs[N];
        cls_results *res[N], *want[CLS_NUM_MODES];
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 10;
        for (int md = 0; md < CLS_NUM_MODES; md++) want[md] = search(f.ref, f.b, (cls_mode)md, 10);
        for (int j = 0; j < N; j++) {
            ck_assert_int_eq(cls_results_create(&res[j]), CLS_OK);
            p.mode = (cls_mode)(j % CLS_NUM_MODES);
            ck_assert_msg(cls_engine_submit(set, f.b, &p, res[j], &jobs[j]) == CLS_OK, "%s", cls_last_error());
        }
        for (int j = 0; j < N; j++) {
            ck_assert_msg(cls_search_wait(jobs[j]) == CLS_OK, "%s", cls_last_error());
            ck_assert_msg(cls_results_compare(want[j % CLS_NUM_MODES], res[j], 0.0) == CLS_OK, "in flight %d: %s", j,
                          cls_last_error());
            cls_search_free(jobs[j]);
            cls_results_free(res[j]);
        }
        for (int md = 0; md < CLS_NUM_MODES; md++) cls_results_free(want[md]);
        /* a search run whole goes to the executor predicted to finish it first (models set, not
         * timed): a lone query to the one of small fixed cost, a batch to the one of high rate,
         * whichever comes first in the list */
        unsigned host = i == 0 ? 0 : 1, dev = 1 - host;
        sched_set_model(engine_sched(set), host, 1e7, 1e-6);
        sched_set_model(engine_sched(set), dev, 1e9, 1e-2);
        sched_set_split_min(engine_sched(set), 100000); /* no split */
        cls_results *one;
        ck_assert_int_eq(cls_results_create(&one), CLS_OK);
        char name[2][32];
        snprintf(name[0], sizeof name[0], "device_%u_queries", host);
        snprintf(name[1], sizeof name[1], "device_%u_queries", dev);
        for (int q = 0; q < 4; q++) {
            ck_assert_msg(cls_engine_search_text(set, "w1 w7", NULL, one) == CLS_OK, "%s", cls_last_error());
            ck_assert_msg(counter(set, name[0]) == 1, "%s: a lone query not on the host", specs[i]);
        }
        same_as_ref(set, f.ref, f.b, CLS_MODE_OR, 10);
        ck_assert_msg(counter(set, name[1]) == cls_batch_count(f.b), "%s: the batch not on the device", specs[i]);
        sched_set_model(engine_sched(set), host, 1e9, 1e-2);
        sched_set_model(engine_sched(set), dev, 1e7, 1e-6);
        ck_assert_msg(cls_engine_search_text(set, "w1 w7", NULL, one) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(counter(set, name[1]) == 1, "%s: the lone query not on the device", specs[i]);
        cls_results_free(one);
        cls_engine_free(set);
    }
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = specs[0];
    o.placement = CLS_PLACEMENT_SHARD;
    cls_engine *e = NULL;
    ck_assert_int_eq(cls_engine_create_opts(f.idx, &o, &e), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "never sharded"), "%s", cls_last_error());
    /* the model: runs of several sizes on t = 2 ms + postings / 10^7 give that line back; runs
     * of one size, the line through the origin; nothing measured predicts 0 */
    exec_model mo = {0};
    ck_assert(exec_model_predict(&mo, 1000) == 0);
    for (int r = 0; r < 40; r++) {
        uint64_t x = 1000 + (uint64_t)(r % 5) * 200000;
        exec_model_add(&mo, x, 0.002 + (double)x / 1e7);
    }
    ck_assert_msg(fabs(mo.rate / 1e7 - 1) < 1e-6 && fabs(mo.fixed - 0.002) < 1e-9, "rate %g fixed %g", mo.rate, mo.fixed);
    ck_assert(fabs(exec_model_predict(&mo, 500000) - 0.052) < 1e-9);
    exec_model same = {0};
    for (int r = 0; r < 5; r++) exec_model_add(&same, 50000, 0.01);
    ck_assert_msg(fabs(same.rate / 5e6 - 1) < 1e-9 && same.fixed == 0, "rate %g fixed %g", same.rate, same.fixed);
    const char *bad[] = {"host,host:2", "host,all", "all,cpu", "host:0,cpu"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(cls_engine_create(f.idx, bad[i], &e) == CLS_E_ARG, "%s accepted", bad[i]);
        ck_assert_ptr_null(e);
    }
    fixture_close(&f);
}
END_TEST

/* Routing by finishing time and deadlines, the models set (sched_set_model) and executors held
 * busy (sched_hold), so nothing is timed: a search waits for a busy executor that would still
 * finish it sooner than the free one (and runs there once it is free), and is taken by the free
 * one (counted stolen) when the busy one's wait makes it later. Searches queue earliest deadline
 * first; a search past its deadline counts its queries late, results unchanged. */
START_TEST(routing_by_finish_time_and_deadline)
{
    fixture f = fixture_open(53, 3000, 200, 23, 120);
    char spec[128];
    snprintf(spec, sizeof spec, "host:1,%s", tu_device());
    cls_engine *set;
    ck_assert_msg(cls_engine_create(f.idx, spec, &set) == CLS_OK, "%s", cls_last_error());
    sched *sc = engine_sched(set);
    sched_set_split_min(sc, 100000); /* whole searches only */
    const unsigned host = 0, dev = 1;
    cls_results *want = search(f.ref, f.b, CLS_MODE_OR, 10), *got;
    ck_assert_int_eq(cls_results_create(&got), CLS_OK);
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = 10;
    /* the device: 1 ms for the batch; the host: 1 s (rates so high that the postings add nothing) */
    sched_set_model(sc, host, 1e15, 1.0);
    sched_set_model(sc, dev, 1e15, 1e-3);
    /* the device busy for 5 ms more: still sooner than the host; the search waits for it */
    sched_hold(sc, dev, 5e-3);
    cls_search *j;
    ck_assert_msg(cls_engine_submit(set, f.b, &p, got, &j) == CLS_OK, "%s", cls_last_error());
    sched_hold(sc, dev, 0);
    ck_assert_msg(cls_search_wait(j) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(counter_of(j, "device_1_queries"), cls_batch_count(f.b));
    ck_assert_uint_eq(counter_of(j, "device_0_queries"), 0);
    ck_assert_msg(cls_results_compare(want, got, 0.0) == CLS_OK, "%s", cls_last_error());
    cls_search_free(j);
    /* the device busy for 100 s: the free host finishes first and takes it from the device's queue */
    sched_hold(sc, dev, 100);
    ck_assert_msg(cls_engine_search(set, f.b, &p, got) == CLS_OK, "%s", cls_last_error());
    sched_hold(sc, dev, 0);
    ck_assert_uint_eq(counter(set, "device_0_queries"), cls_batch_count(f.b));
    ck_assert_msg(cls_results_compare(want, got, 0.0) == CLS_OK, "%s", cls_last_error());
    cls_executor_info x[2];
    ck_assert_uint_eq(cls_engine_executors(set, x, 2), 2);
    ck_assert_uint_eq(x[host].stolen, 1);
    ck_assert_uint_eq(x[dev].stolen, 0);
    ck_assert_str_eq(x[host].name, "host:1");
    /* deadlines: both executors held, three searches queued, due in 300, 100 and 200 s: they run
     * in that order of deadlines (each records when it ran through its executor's searches) */
    sched_set_model(sc, host, 0, 0);
    sched_set_model(sc, dev, 0, 0);
    sched_hold(sc, host, 100);
    sched_hold(sc, dev, 100);
    double due[3] = {300e3, 100e3, 200e3};
    cls_search *js[3];
    cls_results *rs[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(cls_results_create(&rs[i]), CLS_OK);
        p.deadline_ms = due[i];
        ck_assert_msg(cls_engine_submit(set, f.b, &p, rs[i], &js[i]) == CLS_OK, "%s", cls_last_error());
    }
    ck_assert_int_eq(sched_queued_position(sc, js[1]), 0);
    ck_assert_int_eq(sched_queued_position(sc, js[2]), 1);
    ck_assert_int_eq(sched_queued_position(sc, js[0]), 2);
    sched_hold(sc, host, 0);
    sched_hold(sc, dev, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(cls_search_wait(js[i]) == CLS_OK, "%s", cls_last_error());
        ck_assert_uint_eq(counter_of(js[i], "queries_late"), 0);
        ck_assert_msg(cls_results_compare(want, rs[i], 0.0) == CLS_OK, "%s", cls_last_error());
        cls_search_free(js[i]);
        cls_results_free(rs[i]);
    }
    /* a deadline already past when the search ends: every query late, the results the same */
    p.deadline_ms = 1e-6;
    ck_assert_msg(cls_engine_search(set, f.b, &p, got) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(counter(set, "queries_late"), cls_batch_count(f.b));
    ck_assert_msg(cls_results_compare(want, got, 0.0) == CLS_OK, "%s", cls_last_error());
    p.deadline_ms = -1;
    ck_assert_int_eq(cls_engine_search(set, f.b, &p, got), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "deadline_ms"), "%s", cls_last_error());
    cls_results_free(got);
    cls_results_free(want);
    cls_engine_free(set);
    fixture_close(&f);
}
END_TEST

/* The per-query cost model: runs drawn from t = 0.5 ms + 0.02 ms a query + 3 ms per million
 * postings of the queries' shortest lists give those coefficients back, predict within 1e-6, and
 * are predicted by the features once fitted (the line's error is larger); nothing measured
 * predicts 0. An executor running several queries at once fits one query's cost on one thread. */
START_TEST(cost_model_fits_the_features)
{
    cost_model m;
    memset(&m, 0, sizeof m);
    double f[BATCH_COST_FEATURES] = {1, 1000, 100, 200, 2};
    ck_assert(cost_model_predict(&m, f) == 0);
    uint64_t r = 88172645463325252ull;
    for (int run = 0; run < 200; run++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        double q = (double)(1 + r % 500), total = q * (double)(1000 + (r >> 9) % 200000);
        double shortest = total * (double)((r >> 20) % 100) / 400, second = total * 0.3, terms = q * (double)(2 + (r >> 30) % 3);
        double g[BATCH_COST_FEATURES] = {q, total, shortest, second, terms};
        cost_model_add(&m, g, 0.5e-3 + 0.02e-3 * q + 3e-9 * shortest);
    }
    ck_assert_msg(cost_model_uses_features(&m), "line in use: features %g line %g", m.err, m.err_line);
    double g[BATCH_COST_FEATURES] = {64, 5e6, 1e6, 1.5e6, 192};
    double want = 0.5e-3 + 0.02e-3 * 64 + 3e-9 * 1e6;
    ck_assert_msg(fabs(cost_model_predict(&m, g) - want) < 1e-6 * want, "predicted %g, want %g", cost_model_predict(&m, g), want);
    ck_assert_msg(cost_model_error(&m) < 1e-3, "error %g", cost_model_error(&m));
    char line[512];
    cost_model_describe(&m, line, sizeof line);
    ck_assert_msg(strstr(line, "features in use"), "%s", line);
    /* an executor of width 4 (four queries at once): runs of 1 to 40 queries at 0.4 ms a query on
     * one thread, 0.1 ms a run, predict a lone query at 0.5 ms and 100 queries at 10.1 ms */
    cost_model h;
    memset(&h, 0, sizeof h);
    h.width = 4;
    for (int run = 0; run < 100; run++) {
        double q = 1 + run % 40, at_once = q < 4 ? q : 4;
        double g2[BATCH_COST_FEATURES] = {q, q * 1e4, q * 1e3, q * 2e3, q * 2};
        cost_model_add(&h, g2, 0.1e-3 + q * 0.4e-3 / at_once);
    }
    double one[BATCH_COST_FEATURES] = {1, 1e4, 1e3, 2e3, 2}, hundred[BATCH_COST_FEATURES] = {100, 1e6, 1e5, 2e5, 200};
    ck_assert_msg(fabs(cost_model_predict(&h, one) - 0.5e-3) < 1e-9, "lone query %g", cost_model_predict(&h, one));
    ck_assert_msg(fabs(cost_model_predict(&h, hundred) - 10.1e-3) < 1e-8, "100 queries %g", cost_model_predict(&h, hundred));
}
END_TEST

/* A search in its parts, as a scheduler would run it over several executors: prepared once,
 * ordered, its queries run in two ranges (each with the re-runs its algorithm asks for), then
 * finished: every mode gives the whole search's results, and the counters count every query once. */
START_TEST(search_runs_in_ranges)
{
    fixture f = fixture_open(29, 9000, 300, 7, 150);
    clx_engine *cx = engine_clx(f.dev);
    or_force_partitions(clx_algo_state(cx, CLS_MODE_OR), 1); /* OR's partitions, pools and re-runs too */
    or_set_pool(clx_algo_state(cx, CLS_MODE_OR), 3);
    const uint64_t nq = cls_batch_count(f.b);
    for (int m = 0; m < CLS_NUM_MODES; m++) {
        cls_results *whole = search(f.dev, f.b, (cls_mode)m, 10), *parts;
        ck_assert_int_eq(cls_results_create(&parts), CLS_OK);
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 10;
        p.mode = (cls_mode)m;
        const uint32_t *order;
        ck_assert_int_eq(clx_search_prepare(cx, &p, nq), CLS_OK);
        ck_assert_int_eq(results_reset(parts, nq, nq * 10), CLS_OK);
        ck_assert_int_eq(clx_search_order(cx, f.b, &order), CLS_OK);
        ck_assert_msg(clx_search_run(cx, f.b, order, nq / 3, parts) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(clx_search_run(cx, f.b, order + nq / 3, nq - nq / 3, parts) == CLS_OK, "%s", cls_last_error());
        clx_search_finish(cx);
        results_pack(parts, clx_search_k(cx));
        ck_assert_msg(cls_results_compare(whole, parts, 0.0) == CLS_OK, "%s: %s", cls_mode_name((cls_mode)m),
                      cls_last_error());
        ck_assert_uint_eq(counter(f.dev, "queries"), nq + counter(f.dev, "queries_rerun"));
        cls_results_free(whole);
        cls_results_free(parts);
    }
    fixture_close(&f);
}
END_TEST

/* A device set: three executors on the test device (`-d cpu,cpu,cpu` on POCL) equal the
 * reference engine in every mode at k 10 and 1,000, OR by partitions with small pools included
 * (each executor runs its own re-runs); each executor takes a share of the queries, and the
 * summed counters count each query once. A list with an empty item or the reference engine in it
 * is refused. */
START_TEST(device_set_matches_reference)
{
    fixture f = fixture_open(31, 9000, 300, 9, 160);
    cls_engine *set = device_set(f.idx, 3, CLS_PLACEMENT_REPLICATE, 1); /* every search split over the three */
    ck_assert_uint_eq(engine_executors(set), 3);
    ck_assert(strstr(cls_engine_describe(set), "3 executors") != NULL);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) small_or_pools(set);
        for (int md = 0; md < CLS_NUM_MODES; md++) {
            same_as_ref(set, f.ref, f.b, (cls_mode)md, 10);
            same_as_ref(set, f.ref, f.b, (cls_mode)md, 1000);
            uint64_t nq = cls_batch_count(f.b);
            ck_assert_uint_eq(counter(set, "device_0_queries") + counter(set, "device_1_queries") +
                                  counter(set, "device_2_queries"), nq);
            ck_assert_uint_gt(counter(set, "device_2_queries"), 0);
            ck_assert_uint_eq(counter(set, "queries"), nq + counter(set, "queries_rerun"));
            if (pass == 1 && md == CLS_MODE_OR) ck_assert_uint_gt(counter(set, "queries_rerun"), 0); /* pools of 3 overflowed */
        }
    }
    cls_engine_free(set);
    const char *bad[] = {"cpu,,cpu", "cpu,ref", ",cpu", "cpu,"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cls_engine *e = NULL;
        ck_assert_int_eq(cls_engine_create(f.idx, bad[i], &e), CLS_E_ARG);
        ck_assert_ptr_null(e);
    }
    fixture_close(&f);
}
END_TEST

/* Searches in flight together on a device set: several submitted at once, each whole on an
 * executor or split, every one equal to the reference engine's, its own counters counting its own
 * queries; a search waited for twice gives the same status, and the synchronous search still works
 * among them. */
START_TEST(device_set_runs_searches_in_flight)
{
    fixture f = fixture_open(37, 6000, 200, 7, 120);
    cls_engine *set = device_set(f.idx, 2, CLS_PLACEMENT_REPLICATE, 50);
    enum { N = 6 };
    cls_results *want[CLS_NUM_MODES], *got[N];
    for (int m = 0; m < CLS_NUM_MODES; m++) want[m] = search(f.ref, f.b, (cls_mode)m, 10);
    cls_search *in[N];
    for (int i = 0; i < N; i++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 10;
        p.mode = (cls_mode)(i % CLS_NUM_MODES);
        ck_assert_int_eq(cls_results_create(&got[i]), CLS_OK);
        ck_assert_msg(cls_engine_submit(set, f.b, &p, got[i], &in[i]) == CLS_OK, "%s", cls_last_error());
    }
    same_as_ref(set, f.ref, f.b, CLS_MODE_OR, 10); /* a synchronous search among them */
    for (int i = N - 1; i >= 0; i--) {
        ck_assert_msg(cls_search_wait(in[i]) == CLS_OK, "%s", cls_last_error());
        ck_assert_int_eq(cls_search_wait(in[i]), CLS_OK);
        ck_assert_int_eq(cls_search_done(in[i]), 1);
        ck_assert_msg(cls_results_compare(want[i % CLS_NUM_MODES], got[i], 0.0) == CLS_OK, "search %d: %s", i,
                      cls_last_error());
        const cls_counter *c;
        size_t nc = cls_search_counters(in[i], &c);
        uint64_t queries = 0, rerun = 0, shares = 0;
        for (size_t j = 0; j < nc; j++) {
            if (!strcmp(c[j].name, "queries")) queries = c[j].value;
            if (!strcmp(c[j].name, "queries_rerun")) rerun = c[j].value;
            if (!strncmp(c[j].name, "device_", 7)) shares += c[j].value;
        }
        ck_assert_uint_eq(queries, cls_batch_count(f.b) + rerun);
        ck_assert_uint_eq(shares, cls_batch_count(f.b));
        cls_search_free(in[i]);
        cls_results_free(got[i]);
    }
    cls_search_free(NULL);
    cls_executor_info x[2];
    ck_assert_uint_eq(cls_engine_executors(set, x, 2), 2);
    ck_assert(x[0].queries + x[1].queries == (N + 1) * cls_batch_count(f.b) && !x[0].set_aside && !x[1].set_aside);
    for (int m = 0; m < CLS_NUM_MODES; m++) cls_results_free(want[m]);
    cls_engine_free(set);
    fixture_close(&f);
}
END_TEST

/* A device that breaks (every launch on executor 1 fails, CLSEARCH_FAULT=enqueue:1+@1): its part
 * of a split search runs on the others, the results are the reference's, and it is set aside with
 * the reason; later searches run without it. When the other two fail too, the search fails with a
 * message saying no executor is left, neither of them is set aside (a failure every executor
 * repeats is not theirs), and the next search runs on them. A single device's failure stays the
 * search's own: the device is not set aside. */
START_TEST(device_set_sets_a_failing_executor_aside)
{
    fixture f = fixture_open(41, 6000, 200, 7, 120);
    cls_engine *set = device_set(f.idx, 3, CLS_PLACEMENT_REPLICATE, 1);
    setenv("CLSEARCH_FAULT", "enqueue:1+@1", 1);
    fault_reload();
    same_as_ref(set, f.ref, f.b, CLS_MODE_OR, 10);
    cls_executor_info x[3];
    ck_assert_uint_eq(cls_engine_executors(set, x, 3), 3);
    ck_assert_msg(!x[0].set_aside && x[1].set_aside && !x[2].set_aside, "%d %d %d", x[0].set_aside, x[1].set_aside,
                  x[2].set_aside);
    ck_assert_msg(strstr(x[1].why, "device memory") || strstr(x[1].why, "OUT_OF_RESOURCES"), "%s", x[1].why);
    same_as_ref(set, f.ref, f.b, CLS_MODE_AND, 10);
    ck_assert_uint_eq(counter(set, "device_1_queries"), 0);
    ck_assert_uint_eq(counter(set, "device_0_queries") + counter(set, "device_2_queries"), cls_batch_count(f.b));
    /* the other two break as well: the search fails, clearly; a failure both repeat is not held
     * against either, so only executor 1 stays aside */
    setenv("CLSEARCH_FAULT", "enqueue:1+@0,enqueue:1+@2", 1);
    fault_reload();
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = 10;
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    ck_assert_int_ne(cls_engine_search(set, f.b, &p, r), CLS_OK);
    ck_assert_msg(strstr(cls_last_error(), "no executor left to run it"), "%s", cls_last_error());
    cls_engine_executors(set, x, 3);
    ck_assert_msg(!x[0].set_aside && x[1].set_aside && !x[2].set_aside, "%d %d %d", x[0].set_aside, x[1].set_aside,
                  x[2].set_aside);
    unsetenv("CLSEARCH_FAULT");
    fault_reload();
    same_as_ref(set, f.ref, f.b, CLS_MODE_AND_OR, 10);
    cls_engine_free(set);
    /* one device: its failure is the search's; it stays in service */
    setenv("CLSEARCH_FAULT", "enqueue:1+@0", 1);
    fault_reload();
    ck_assert_int_ne(cls_engine_search(f.dev, f.b, &p, r), CLS_OK);
    ck_assert_ptr_null(strstr(cls_last_error(), "no executor left"));
    cls_engine_executors(f.dev, x, 1);
    ck_assert_int_eq(x[0].set_aside, 0);
    unsetenv("CLSEARCH_FAULT");
    fault_reload();
    same_as_ref(f.dev, f.ref, f.b, CLS_MODE_OR, 10);
    cls_results_free(r);
    fixture_close(&f);
}
END_TEST

/* A device set sharded by documents (`-d cpu,cpu,cpu`, CLS_PLACEMENT_SHARD): every search runs
 * on each shard and their top k merge into the reference engine's results in every mode at k 10
 * and 1,000 (and-or from each shard's AND and OR lists), OR by partitions with small pools too,
 * synchronous and submitted; each executor answers every query. A list of more devices than
 * documents leaves the empty ranges out. and-or's k is bounded on a sharded engine. */
START_TEST(device_set_sharded_matches_reference)
{
    fixture f = fixture_open(43, 9000, 300, 9, 160);
    cls_engine *set = device_set(f.idx, 3, CLS_PLACEMENT_SHARD, 0);
    ck_assert_uint_eq(engine_executors(set), 3);
    ck_assert_msg(strstr(cls_engine_describe(set), "sharded by documents (asked)"), "%s", cls_engine_describe(set));
    const uint64_t nq = cls_batch_count(f.b);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) small_or_pools(set);
        for (int md = 0; md < CLS_NUM_MODES; md++) {
            same_as_ref(set, f.ref, f.b, (cls_mode)md, 10);
            same_as_ref(set, f.ref, f.b, (cls_mode)md, 1000);
            for (unsigned i = 0; i < 3; i++) {
                char name[32];
                snprintf(name, sizeof name, "device_%u_queries", i);
                ck_assert_uint_eq(counter(set, name), nq);
            }
        }
    }
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = 10;
    cls_results *want = search(f.ref, f.b, CLS_MODE_OR, 10), *got[2];
    cls_search *in[2];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(cls_results_create(&got[i]), CLS_OK);
        ck_assert_msg(cls_engine_submit(set, f.b, &p, got[i], &in[i]) == CLS_OK, "%s", cls_last_error());
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(cls_search_wait(in[i]) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(cls_results_compare(want, got[i], 0.0) == CLS_OK, "%s", cls_last_error());
        cls_search_free(in[i]);
        cls_results_free(got[i]);
    }
    p.mode = CLS_MODE_AND_OR;
    p.k = CLS_MAX_K / 2 + 1;
    ck_assert_int_eq(cls_engine_search(set, f.b, &p, want), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "and-or on a sharded engine takes k up to"), "%s", cls_last_error());
    cls_results_free(want);
    cls_engine_free(set);
    fixture_close(&f);
    /* three documents over five devices: two ranges are empty and get no executor */
    fixture t = fixture_open(47, 3, 20, 11, 12);
    set = device_set(t.idx, 5, CLS_PLACEMENT_SHARD, 0);
    ck_assert_uint_eq(engine_executors(set), 3);
    ck_assert_msg(strstr(cls_engine_describe(set), "2 empty ranges left out"), "%s", cls_engine_describe(set));
    for (int md = 0; md < CLS_NUM_MODES; md++) {
        cls_results *a = search(t.ref, t.b, (cls_mode)md, 10), *b = search(set, t.b, (cls_mode)md, 10);
        ck_assert_msg(cls_results_compare(a, b, 0.0) == CLS_OK, "%s: %s", cls_mode_name((cls_mode)md), cls_last_error());
        cls_results_free(a);
        cls_results_free(b);
    }
    cls_engine_free(set);
    fixture_close(&t);
}
END_TEST

/* Long queries over many work-groups: with tiny work units every query with candidates spreads
 * over many units, and AND and and-or still give the reference's results. */
START_TEST(work_units_split_queries)
{
    fixture f = fixture_open(23, 2500, 300, 5, 120);
    const uint32_t chunks[] = {1, 7, 64, 1000};
    for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
        set_chunk(f.dev, chunks[i]);
        same_as_ref(f.dev, f.ref, f.b, CLS_MODE_AND, 10);
        same_as_ref(f.dev, f.ref, f.b, CLS_MODE_AND, 1000);
        same_as_ref(f.dev, f.ref, f.b, CLS_MODE_AND_OR, 50);
    }
    fixture_close(&f);
}
END_TEST

/* A batch that fails for want of device memory runs again in halves, from its first query,
 * whether it fails at its enqueue or when it is waited for (the batch after it, enqueued while it
 * ran, is then forgotten and planned again): the search still gives the reference's results, in
 * more batches. A batch of one query that fails fails the search, and the engine's next search
 * is whole (no term of the forgotten batches left slotted in a plan). */
START_TEST(failed_batch_runs_again_in_halves)
{
    fixture f = fixture_open(25, 2500, 300, 6, 120);
    cls_engine *dev = engine_of_tiny_batches(f.idx);
    clx_engine *cx = engine_clx(dev);
    clx_set_batch_floor(cx, 8);
    const cls_mode modes[] = {CLS_MODE_OR, CLS_MODE_AND};
    const cls_profile_step *st;
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        same_as_ref(dev, f.ref, f.b, modes[m], 10); /* the rate measured: batches of the floor */
        uint32_t clean, batches;
        cls_engine_profile(dev, &st, &clean);
        ck_assert_uint_gt(clean, 4);
        for (int late = 0; late < 2; late++)
            for (uint32_t nth = 1; nth <= 3; nth++) {
                clx_fail_batch(cx, nth, late);
                same_as_ref(dev, f.ref, f.b, modes[m], 10);
                cls_engine_profile(dev, &st, &batches);
                ck_assert_msg(batches > clean, "%s, batch %u failing (late %d): %u batches, %u without",
                              cls_mode_name(modes[m]), nth, late, batches, clean);
            }
    }
    clx_set_batch_floor(cx, 1);
    for (int late = 0; late < 2; late++) {
        cls_search_params p;
        cls_search_defaults(&p);
        p.k = 10;
        p.mode = CLS_MODE_OR;
        cls_results *rd;
        ck_assert_int_eq(cls_results_create(&rd), CLS_OK);
        /* the search's batches hold one query each (the floor, and the rate's target of 1 us) */
        clx_fail_batch(cx, 3, late);
        ck_assert_int_eq(cls_engine_search(dev, f.b, &p, rd), CLS_E_DEVMEM);
        cls_results_free(rd);
        same_as_ref(dev, f.ref, f.b, CLS_MODE_OR, 10);
    }
    cls_engine_free(dev);
    fixture_close(&f);
}
END_TEST

/* The plan, without a device: every batch respects the query limit and the budget (unless it
 * holds one query), batches tile the queries in order, and a term shared by queries of a batch
 * is decoded once. */
START_TEST(plan_respects_limits)
{
    cls_index *idx = random_index(8, 1500, 200);
    cls_batch *b = random_queries(idx, 6, 300, 200);
    batch_plan pl;
    ck_assert_int_eq(plan_init(&pl, idx), CLS_OK);
    const plan_limits lims[] = {{.budget = UINT64_MAX, .max_alloc = UINT64_MAX, .max_queries = 7},
                                {.budget = 200 << 10, .max_alloc = UINT64_MAX, .max_queries = 1024},
                                {.budget = UINT64_MAX, .max_alloc = 64 << 10, .max_queries = 1024},
                                {.budget = UINT64_MAX, .max_alloc = UINT64_MAX, .max_queries = 1024, .max_cost = 3000,
                                 .cost_floor = 1}};
    /* each algorithm's state for planning alone (no device); OR by partitions, as a search of a
     * collection cut into 24 partitions would prepare it */
    void *states[CLS_NUM_MODES] = {NULL};
    const algo_env env = {.idx = idx};
    for (int m = 0; m < CLS_NUM_MODES; m++)
        if (query_algo_for(m)->create) ck_assert_int_eq(query_algo_for(m)->create(&env, &states[m]), CLS_OK);
    or_state *os = states[CLS_MODE_OR];
    os->parts = 24;
    os->seeds = 2;
    os->pool = 1024;
    for (int m = 0; m < CLS_NUM_MODES; m++)
        for (size_t l = 0; l < sizeof lims / sizeof *lims; l++) {
            uint64_t q0 = 0;
            unsigned nbatches = 0;
            while (q0 < cls_batch_count(b)) {
                plan_begin(&pl, query_algo_for(m), states[m], 10, &lims[l], NULL, q0);
                int added = 1;
                while (added && q0 + pl.nq < cls_batch_count(b)) ck_assert_int_eq(plan_add(&pl, b, &added), CLS_OK);
                ck_assert_uint_ge(pl.nq, 1);
                ck_assert_uint_le(pl.nq, lims[l].max_queries);
                if (pl.nq > 1) {
                    ck_assert_uint_le(pl.bytes, lims[l].budget);
                    if (lims[l].max_cost) ck_assert_uint_le(pl.cost, lims[l].max_cost);
                    ck_assert_uint_le(pl.dec * 4, lims[l].max_alloc);
                }
                /* no block decoded twice, none landing on another's slots, all within dec */
                uint8_t *seen = calloc(idx->num_blocks + 1, 1), *used = calloc(pl.dec / idx->block_size + 1, 1);
                abi_task *tasks = malloc(((size_t)pl.ntasks + 1) * sizeof *tasks); /* as expand_lists makes them */
                uint32_t ntasks = 0;
                for (uint32_t li = 0; li < pl.nlists; li++) {
                    const abi_list *ls = &pl.lists[li];
                    ck_assert_uint_eq(ls->task_base, ntasks);
                    for (uint32_t bk = 0; bk < ls->num_blocks; bk++)
                        tasks[ntasks++] = (abi_task){ls->first_block + bk, ls->dst + bk * idx->block_size};
                }
                ck_assert_uint_eq(ntasks, pl.ntasks);
                for (uint32_t t = 0; t < pl.ntasks; t++) {
                    const abi_task *tk = &tasks[t];
                    ck_assert_uint_lt(tk->block, idx->num_blocks);
                    ck_assert_uint_eq(tk->dst % idx->block_size, 0);
                    ck_assert_uint_lt(tk->dst, pl.dec);
                    ck_assert_msg(!seen[tk->block] && !used[tk->dst / idx->block_size], "block %u planned twice", tk->block);
                    seen[tk->block] = used[tk->dst / idx->block_size] = 1;
                }
                free(seen);
                free(used);
                free(tasks);
                for (uint32_t i = 0; i < pl.nq; i++) ck_assert_uint_le(pl.queries[i].num_terms, 6);
                plan_layout lay;
                ck_assert_int_eq(plan_finish(&pl, &lay), CLS_OK);
                for (uint32_t t = 0; t < idx->num_terms; t++) ck_assert_uint_eq(pl.slot[t], 0);
                q0 += pl.nq;
                nbatches++;
            }
            ck_assert_uint_eq(q0, cls_batch_count(b));
            if (l == 0) ck_assert_uint_eq(nbatches, (cls_batch_count(b) + 6) / 7);
            else ck_assert_uint_gt(nbatches, 1);
        }
    for (int m = 0; m < CLS_NUM_MODES; m++)
        if (query_algo_for(m)->free) query_algo_for(m)->free(states[m]);
    plan_free(&pl);
    cls_batch_free(b);
    cls_index_close(idx);
}
END_TEST

/* ---- the list cache ----------------------------------------------------------------------------- */

/* Device memory that leaves the list cache about `share` of the index's lists: the norms, then
 * twice the lists' share (the engine gives the cache half of what it may take). */
static uint64_t mem_for_share(const cls_index *idx, double share)
{
    uint64_t lists = idx->num_words * 4 + idx->num_blocks * sizeof(idx_block), norms = ((uint64_t)idx->num_docs + 1) * 4;
    return 2 * (norms + (uint64_t)((double)lists * share * 1.15)) + (32 << 10);
}

/* Indexes larger than the device: with the lists cached in a fraction of their size, lists are
 * evicted and loaded batch after batch, and every algorithm still gives the reference's results;
 * a second search finds lists the first left on the device. */
START_TEST(list_cache_matches_reference)
{
    fixture f = fixture_open(31, 2500, 300, 9, 150);
    const double shares[] = {0.5, 0.15};
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
        cls_engine_opts o;
        cls_engine_opts_init(&o);
        o.device = tu_device();
        o.device_mem = mem_for_share(f.idx, shares[i]);
        cls_engine *dev;
        ck_assert_msg(cls_engine_create_opts(f.idx, &o, &dev) == CLS_OK, "%s", cls_last_error());
        ck_assert_msg(strstr(cls_engine_describe(dev), "lists: cached on the device"), "%s", cls_engine_describe(dev));
        for (int pass = 0; pass < 2; pass++) { /* pass 1: many small batches, so lists come and go */
            if (pass) clx_set_budget(engine_clx(dev), 24 << 10);
            for (int m = 0; m < CLS_NUM_MODES; m++) {
                same_as_ref(dev, f.ref, f.b, (cls_mode)m, 10);
                ck_assert_uint_gt(counter(dev, "lists_loaded"), 0);
                ck_assert_uint_gt(counter(dev, "bytes_loaded"), 0);
                same_as_ref(dev, f.ref, f.b, (cls_mode)m, 1000);
                ck_assert_uint_gt(counter(dev, "lists_found"), 0);
            }
        }
        cls_engine_free(dev);
    }
    fixture_close(&f);
}
END_TEST

/* A query whose lists cannot all be on the device at once is a clear error, not a crash or a
 * wrong answer, and the engine still answers the queries that fit afterwards. */
START_TEST(list_cache_too_small_is_an_error)
{
    cls_index *idx = random_index(33, 2000, 100);
    cls_engine *ref, *dev;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_engine_opts o;
    cls_engine_opts_init(&o);
    o.device = tu_device();
    o.device_mem = 1000; /* not even the norms */
    ck_assert_int_eq(cls_engine_create_opts(idx, &o, &dev), CLS_E_DEVMEM);
    ck_assert_ptr_nonnull(strstr(cls_last_error(), "device memory"));
    o.device_mem = mem_for_share(idx, 0.02);
    ck_assert_msg(cls_engine_create_opts(idx, &o, &dev) == CLS_OK, "%s", cls_last_error());
    cls_batch *big, *small;
    ck_assert_int_eq(cls_batch_create(idx, &big), CLS_OK);
    ck_assert_int_eq(cls_batch_create(idx, &small), CLS_OK);
    ck_assert_int_eq(cls_batch_add(big, "big", "w0 w1 w2 w3"), CLS_OK); /* the four longest lists */
    ck_assert_int_eq(cls_batch_add(small, "s1", "w60 w70"), CLS_OK);
    ck_assert_int_eq(cls_batch_add(small, "s2", "w61"), CLS_OK);
    cls_search_params p;
    cls_search_defaults(&p);
    cls_results *r;
    ck_assert_int_eq(cls_results_create(&r), CLS_OK);
    for (int m = 0; m < CLS_NUM_MODES; m++) {
        p.mode = (cls_mode)m;
        ck_assert_int_eq(cls_engine_search(dev, big, &p, r), CLS_E_DEVMEM);
        ck_assert_msg(strstr(cls_last_error(), "query big needs more room"), "%s", cls_last_error());
        same_as_ref(dev, ref, small, (cls_mode)m, 10);
    }
    cls_results_free(r);
    cls_batch_free(big);
    cls_batch_free(small);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* The cache's bookkeeping without a device: through random batches of pins, with rollbacks, the
 * resident lists never overlap in either arena, holes and lists tile each arena exactly, the LRU
 * chain holds exactly the resident lists, and a list pinned in a batch keeps its place until the
 * batch ends. */
START_TEST(list_cache_bookkeeping)
{
    cls_index *idx = random_index(35, 1500, 200);
    uint64_t lists = idx->num_words, blocks = idx->num_blocks;
    const uint64_t caps[][2] = {{lists, blocks}, {lists / 3, blocks / 3}, {lists / 10, blocks / 10}};
    uint64_t st = 99;
    uint8_t *wmap = malloc(lists + 1), *bmap = malloc(blocks + 1);
    uint32_t *pinned = malloc(((size_t)idx->num_terms + 1) * sizeof *pinned), *pos = malloc(((size_t)idx->num_terms + 1) * 4);
    for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
        list_cache lc;
        ck_assert_int_eq(lc_init(&lc, idx, caps[c][0], caps[c][1]), CLS_OK);
        for (int batch = 0; batch < 200; batch++) {
            lc_begin(&lc);
            uint32_t npinned = 0;
            for (int q = 0; q < 20; q++) {
                size_t mark = lc.nloads;
                uint32_t npinned0 = npinned;
                int ok = 1;
                for (int j = 0; j < 3 && ok; j++) {
                    double u = (double)(tu_rand(&st) % 100000) / 100000.0;
                    uint32_t t = (uint32_t)(u * u * idx->num_terms), bp;
                    int fits;
                    ck_assert_int_eq(lc_pin(&lc, t, &bp, &fits), CLS_OK);
                    if (!fits) ok = 0;
                    else pinned[npinned] = t, pos[npinned++] = bp;
                }
                if (!ok || tu_rand(&st) % 7 == 0) { /* the query does not fit, or pretend so */
                    ck_assert_int_eq(lc_rollback(&lc, mark), CLS_OK);
                    npinned = npinned0; /* what it pinned may stay resident or not; earlier pins hold */
                }
            }
            for (uint32_t i = 0; i < npinned; i++) /* pinned lists did not move within the batch */
                ck_assert_uint_eq(lc.e[pinned[i]].block_pos, pos[i]);
            /* the arenas: lists and holes tile them */
            memset(wmap, 0, lists + 1);
            memset(bmap, 0, blocks + 1);
            uint64_t nres = 0;
            for (uint32_t t = 0; t < idx->num_terms; t++) {
                if (lc.e[t].block_pos == LC_NONE) continue;
                nres++;
                uint64_t w0, nw;
                lc_list_words(idx, t, &w0, &nw);
                for (uint64_t w = lc.e[t].word_pos; w < lc.e[t].word_pos + nw; w++) {
                    ck_assert_uint_lt(w, lc.words.size);
                    ck_assert_msg(!wmap[w], "word %llu held twice", (unsigned long long)w);
                    wmap[w] = 1;
                }
                for (uint64_t b = lc.e[t].block_pos; b < (uint64_t)lc.e[t].block_pos + idx->terms[t].num_blocks; b++) {
                    ck_assert_uint_lt(b, lc.blocks.size);
                    ck_assert_msg(!bmap[b], "block %llu held twice", (unsigned long long)b);
                    bmap[b] = 1;
                }
            }
            const lc_arena *ar[2] = {&lc.words, &lc.blocks};
            uint8_t *map[2] = {wmap, bmap};
            for (int a = 0; a < 2; a++) {
                for (size_t h = 0; h < ar[a]->nholes; h++) {
                    if (h) ck_assert_uint_lt(ar[a]->holes[h - 1].at + ar[a]->holes[h - 1].len, ar[a]->holes[h].at);
                    for (uint64_t x = ar[a]->holes[h].at; x < ar[a]->holes[h].at + ar[a]->holes[h].len; x++) {
                        ck_assert_uint_lt(x, ar[a]->size);
                        ck_assert(!map[a][x]);
                        map[a][x] = 1;
                    }
                }
                for (uint64_t x = 0; x < ar[a]->size; x++) ck_assert_msg(map[a][x], "arena %d unit %llu lost", a, (unsigned long long)x);
            }
            uint64_t chain = 0;
            for (uint32_t t = lc.lru; t != LC_NONE; t = lc.e[t].next) chain++;
            ck_assert_uint_eq(chain, nres);
        }
        ck_assert_uint_gt(lc.misses, 0);
        if (c > 0) ck_assert_uint_gt(lc.evictions, 0);
        lc_free(&lc);
    }
    free(wmap), free(bmap), free(pinned), free(pos);
    cls_index_close(idx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("query");
    TCase *tc = tcase_create("algorithms");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, each_algorithm_matches_its_reference, 0, CLS_NUM_MODES);
    tcase_add_test(tc, unknown_mode_is_refused);
    tcase_add_test(tc, and_skips_blocks);
    tcase_add_test(tc, and_prunes_one_term_queries);
    tcase_add_test(tc, or_prunes_by_partitions);
    tcase_add_test(tc, or_hashes_queries_of_few_postings);
    tcase_add_test(tc, or_pool_theta_keeps_pools_small);
    tcase_add_test(tc, search_text_is_one_query);
    tcase_add_test(tc, weighted_terms);
    tcase_add_test(tc, and_or_is_and_completed_by_or);
    tcase_add_test(tc, budget_splits_batches);
    tcase_add_test(tc, work_units_split_queries);
    tcase_add_test(tc, cost_model_sizes_batches);
    tcase_add_test(tc, failed_batch_runs_again_in_halves);
    tcase_add_test(tc, plan_respects_limits);
    tcase_add_test(tc, search_runs_in_ranges);
    tcase_add_test(tc, device_set_matches_reference);
    tcase_add_test(tc, device_set_runs_searches_in_flight);
    tcase_add_test(tc, device_set_sets_a_failing_executor_aside);
    tcase_add_test(tc, device_set_sharded_matches_reference);
    tcase_add_test(tc, postings_verified_once);
    tcase_add_test(tc, list_cache_matches_reference);
    tcase_add_test(tc, list_cache_too_small_is_an_error);
    tcase_add_test(tc, list_cache_bookkeeping);
    tcase_add_test(tc, host_matches_reference);
    tcase_add_test(tc, host_with_a_device_matches_reference);
    tcase_add_test(tc, routing_by_finish_time_and_deadline);
    tcase_add_test(tc, cost_model_fits_the_features);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite()); }
